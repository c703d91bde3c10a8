// libFuzzer target: the Retry-After header of a 429 or 503 from the API
// server (parse_retry_after, watch/kube/backoff.h), as the HTTP parser hands
// it over (the field value, up to the header limit). Invariants checked: a
// delay is whole seconds between 0 and the five-minute cap; it is given
// exactly for the digits-only form (surrounding spaces allowed) and for
// nothing else; spaces around a value change nothing.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tests/fuzz/fuzz_check.h"
#include "watch/kube/backoff.h"

namespace {

using namespace sb::watch::kube;

constexpr int64_t kCapSeconds = 300;

// The delta-seconds the value states, nullopt when it is not that form; at
// most 9 digits, so that the value cannot overflow on the way to the cap.
std::optional<int64_t> delta_seconds(std::string_view value) {
    size_t first = value.find_first_not_of(' ');
    if (first == std::string_view::npos) return std::nullopt;
    value = value.substr(first, value.find_last_not_of(' ') - first + 1);
    if (value.size() > 9) return std::nullopt;
    int64_t seconds = 0;
    for (char c : value) {
        if (c < '0' || c > '9') return std::nullopt;
        seconds = seconds * 10 + (c - '0');
    }
    return seconds;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view value(reinterpret_cast<const char*>(data), size);
    const std::optional<Millis> delay = parse_retry_after(value);
    const std::optional<int64_t> seconds = delta_seconds(value);
    FUZZ_REQUIRE(delay.has_value() == seconds.has_value());
    if (!delay) return 0;
    FUZZ_REQUIRE(delay->count() >= 0 && delay->count() % 1000 == 0);
    FUZZ_REQUIRE(delay->count() == std::min(*seconds, kCapSeconds) * 1000);
    FUZZ_REQUIRE(parse_retry_after(" " + std::string(value) + "  ") == delay);
    return 0;
}
