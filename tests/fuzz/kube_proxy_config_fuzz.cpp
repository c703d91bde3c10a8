// libFuzzer target: the options of the `switchboard` binary, from outside
// bytes. The input is
//   1. a KubeProxyConfiguration, parsed on its own (parse_kube_proxy_config);
//   2. the --config file of `--config=PATH`, read from memory, so that every
//      value the file sets also runs through its option row's validation;
//   3. split on NUL and newline bytes, a command line of at most kMaxArgs
//      arguments (the flag tokenizer; `--config` there reads the input too);
//   4. a KubeletConfiguration, whose DNS fields `pod-dns` and `lookup` read
//      (parse_kubelet_config_dns).
// Invariants checked: nothing crashes, leaks, hangs or throws (no exception
// is caught here: one escaping is a finding); every rejection is one
// non-empty kInvalidArgument line, and every warning one line, without
// control characters; a file the config parser refuses is refused by
// parse_flags with the same message; a parse that succeeds names a node.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "proxy/commands/kubelet_dns_flags.h"
#include "proxy/options/flags.h"
#include "proxy/options/kube_proxy_config.h"

namespace {

using namespace sb;

constexpr size_t kMaxArgs = 16;
constexpr std::string_view kConfigPath = "/var/lib/kube-proxy/config.conf";

// One line: no newline, nor any other control character a terminal acts on.
void check_line(const std::string& line) {
    for (char c : line) {
        if (std::iscntrl(static_cast<unsigned char>(c))) std::abort();
    }
}

// For KubeProxyConfig and Options: both carry warnings.
template <typename T>
void check(const Result<T>& result) {
    if (!result) {
        if (result.error().code != ErrorCode::kInvalidArgument) std::abort();
        if (result.error().message.empty()) std::abort();
        return check_line(result.error().message);
    }
    for (const auto& warning : result->warnings) check_line(warning);
    if constexpr (std::is_same_v<T, proxy::Options>) {
        if (result->command == proxy::Command::kRun && result->node_name.empty()) std::abort();
    }
}

std::vector<std::string> split_arguments(std::string_view bytes) {
    std::vector<std::string> args;
    size_t start = 0;
    while (start <= bytes.size() && args.size() < kMaxArgs) {
        size_t end = bytes.find_first_of(std::string_view("\0\n", 2), start);
        if (end == std::string_view::npos) end = bytes.size();
        args.emplace_back(bytes.substr(start, end - start));
        start = end + 1;
    }
    return args;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    proxy::Environment environment;
    environment.hostname = "fuzz-node";
    environment.read_file = [bytes](const std::string&) -> Result<std::string> {
        return std::string(bytes);
    };

    auto config = proxy::parse_kube_proxy_config(bytes, kConfigPath);
    check(config);

    auto from_file = proxy::parse_flags({"--config=" + std::string(kConfigPath)}, environment);
    check(from_file);
    if (!config && (from_file || from_file.error().message != config.error().message)) {
        std::abort();
    }

    check(proxy::parse_flags(split_arguments(bytes), environment));

    auto kubelet =
        proxy::parse_kubelet_config_dns(std::string(bytes), "/var/lib/kubelet/config.yaml");
    if (!kubelet) {
        if (kubelet.error().code != ErrorCode::kInvalidArgument) std::abort();
        check_line(kubelet.error().message);
    }
    return 0;
}
