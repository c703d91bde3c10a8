#include "proxy/app/node_setup.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "base/file_text.h"
#include "base/log.h"

namespace sb::proxy {

namespace {

constexpr int64_t kConntrackMaxCap = 1048576;

std::optional<int64_t> parse_int(std::string_view text) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
        text.remove_suffix(1);
    }
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// A /proc or /sys entry's text; nullopt when it cannot be read.
std::optional<std::string> read_text(const std::string& path) {
    auto text = read_file_text(path);
    if (!text) return std::nullopt;
    return std::move(*text);
}

std::optional<int64_t> read_int(const std::string& path) {
    auto text = read_text(path);
    if (!text) return std::nullopt;
    return parse_int(*text);
}

// Writes the decimal value; never creates the file (a missing sysctl means
// the kernel has no such setting). Returns the warning, if any.
std::optional<std::string> write_int(const std::string& path, int64_t value) {
    std::string text = std::to_string(value);
    int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    int error = 0;
    if (fd < 0) {
        error = errno;
    } else {
        error = write_whole(fd, text);
        if (::close(fd) != 0 && error == 0) error = errno;
    }
    if (error != 0) {
        return fmt::format("cannot set {} to {}: {}", path, text, std::strerror(error));
    }
    log::info("set {} to {}", path, text);
    return std::nullopt;
}

// kube-proxy's setIntSysCtl: writes when the value differs (or cannot be
// read).
void set_sysctl(const std::string& path, int64_t value, std::vector<std::string>& warnings) {
    if (read_int(path) == value) return;
    if (auto warning = write_int(path, value)) warnings.push_back(*warning);
}

// Whole seconds of a timeout; 0 for "leave alone" (and for a timeout under a
// second, which the sysctls cannot express).
int64_t seconds_of(std::chrono::nanoseconds timeout) {
    return std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
}

}  // namespace

int64_t conntrack_max(const ConntrackOptions& conntrack, int cpus) {
    if (conntrack.max_per_core <= 0) return 0;
    int64_t scaled = int64_t{conntrack.max_per_core} * std::max(cpus, 1);
    if (scaled > kConntrackMaxCap) return kConntrackMaxCap;
    return std::max<int64_t>(scaled, conntrack.min);
}

int count_cpus(const KernelPaths& paths) {
    if (auto text = read_text(paths.sys + "/devices/system/cpu/online")) {
        // "0-3,6,8-9": ranges and single CPUs.
        int count = 0;
        std::stringstream list(*text);
        std::string item;
        bool valid = true;
        while (std::getline(list, item, ',')) {
            size_t dash = item.find('-');
            auto first = parse_int(item.substr(0, dash));
            auto last = dash == std::string::npos ? first : parse_int(item.substr(dash + 1));
            if (!first || !last || *last < *first) {
                valid = false;
                break;
            }
            count += static_cast<int>(*last - *first + 1);
        }
        if (valid && count > 0) return count;
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

std::vector<std::string> apply_conntrack_settings(const ConntrackOptions& conntrack,
                                                  const KernelPaths& paths) {
    std::vector<std::string> warnings;
    const std::string netfilter = paths.proc + "/sys/net/netfilter/";
    int64_t max = conntrack_max(conntrack, count_cpus(paths));
    if (max > 0) {
        const std::string max_path = netfilter + "nf_conntrack_max";
        auto current = read_int(max_path);
        if (!current || *current < max) {
            if (auto warning = write_int(max_path, max)) warnings.push_back(*warning);
        }
        // The hash table should hold a quarter of the entries. Linux takes
        // the parameter from the initial network namespace only; a refusal
        // is a warning like any other.
        const std::string hashsize_path = paths.sys + "/module/nf_conntrack/parameters/hashsize";
        auto hashsize = read_int(hashsize_path);
        if (!hashsize) {
            warnings.push_back(fmt::format("cannot read {}", hashsize_path));
        } else if (*hashsize < max / 4) {
            if (auto warning = write_int(hashsize_path, max / 4)) warnings.push_back(*warning);
        }
    }
    for (auto [timeout, name] :
         {std::pair{conntrack.tcp_established_timeout, "nf_conntrack_tcp_timeout_established"},
          std::pair{conntrack.tcp_close_wait_timeout, "nf_conntrack_tcp_timeout_close_wait"},
          std::pair{conntrack.udp_timeout, "nf_conntrack_udp_timeout"},
          std::pair{conntrack.udp_stream_timeout, "nf_conntrack_udp_timeout_stream"}}) {
        if (int64_t seconds = seconds_of(timeout); seconds > 0) {
            set_sysctl(netfilter + name, seconds, warnings);
        }
    }
    if (conntrack.tcp_be_liberal)
        set_sysctl(netfilter + "nf_conntrack_tcp_be_liberal", 1, warnings);
    return warnings;
}

std::vector<std::string> apply_oom_score_adj(int value, const KernelPaths& paths) {
    std::vector<std::string> warnings;
    if (auto warning = write_int(paths.proc + "/self/oom_score_adj", value)) {
        warnings.push_back(*warning);
    }
    return warnings;
}

std::vector<std::string> raise_open_file_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return {fmt::format("cannot read RLIMIT_NOFILE: {}", std::strerror(errno))};
    }
    if (limit.rlim_cur >= limit.rlim_max) return {};
    const rlim_t before = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
        return {fmt::format("cannot raise RLIMIT_NOFILE from {} to {}: {}", before, limit.rlim_max,
                            std::strerror(errno))};
    }
    log::info("open file limit raised from {} to {}", before, limit.rlim_max);
    return {};
}

std::vector<std::string> apply_node_settings(const Options& options, const KernelPaths& paths) {
    auto warnings = apply_conntrack_settings(options.conntrack, paths);
    if (!options.init_only) {
        for (auto& warning : apply_oom_score_adj(options.oom_score_adj, paths)) {
            warnings.push_back(std::move(warning));
        }
        for (auto& warning : raise_open_file_limit()) warnings.push_back(std::move(warning));
    }
    return warnings;
}

}  // namespace sb::proxy
