// libFuzzer target: the Corefile parser and its mapping to the typed DNS
// configuration. Invariants checked: nothing crashes, hangs or reads out of
// bounds (ASan/UBSan); every error is one line that starts with the path and
// a line number; every parsed zone is fully qualified and lower-case.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dns/corefile/config.h"
#include "dns/corefile/grammar.h"

namespace {

using namespace sb;

constexpr std::string_view kPath = "Corefile";

void check_error_line(const std::string& message) {
    // "Corefile:N: why", no newline.
    if (message.rfind("Corefile:", 0) != 0) std::abort();
    size_t i = kPath.size() + 1;
    size_t digits = i;
    while (digits < message.size() && message[digits] >= '0' && message[digits] <= '9') ++digits;
    if (digits == i || digits >= message.size() || message[digits] != ':') std::abort();
    if (message.find('\n') != std::string::npos) std::abort();
}

void check_zone(const std::string& zone) {
    if (zone.empty() || zone.back() != '.') std::abort();
    for (char c : zone) {
        if (c >= 'A' && c <= 'Z') std::abort();
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    dns::EnvironmentLookup lookup = [](const std::string& name) -> std::optional<std::string> {
        if (name == "DOMAIN") return std::string("cluster.local");
        if (name == "BRACE") return std::string("{");
        return std::nullopt;
    };
    auto parsed = dns::parse_corefile(text, kPath, lookup);
    if (!parsed) {
        check_error_line(parsed.error().message);
        return 0;
    }
    for (const auto& block : parsed->blocks) {
        if (block.zones.empty()) std::abort();
        for (const auto& zone : block.zones) check_zone(zone.zone);
    }
    auto config = dns::map_corefile(*parsed, kPath);
    if (!config) {
        check_error_line(config.error().message);
        return 0;
    }
    for (const auto& warning : config->warnings) check_error_line(warning);
    return 0;
}
