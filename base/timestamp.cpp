#include "base/timestamp.h"

#include <fmt/format.h>

#include <ctime>

namespace sb {

namespace {

// `count` decimal digits at `text[at]`, or -1.
int digits(std::string_view text, size_t at, size_t count) {
    if (at + count > text.size()) return -1;
    int value = 0;
    for (size_t i = at; i < at + count; ++i) {
        if (text[i] < '0' || text[i] > '9') return -1;
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

}  // namespace

std::optional<SystemTime> parse_rfc3339(std::string_view text) {
    using namespace std::chrono;
    // YYYY-MM-DDTHH:MM:SS: 19 characters.
    if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' ||
        text[13] != ':' || text[16] != ':') {
        return std::nullopt;
    }
    const int y = digits(text, 0, 4), mo = digits(text, 5, 2), d = digits(text, 8, 2);
    const int h = digits(text, 11, 2), mi = digits(text, 14, 2), s = digits(text, 17, 2);
    if (y < 0 || mo < 0 || d < 0 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 59) {
        return std::nullopt;
    }
    const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                              day{static_cast<unsigned>(d)}};
    if (!date.ok()) return std::nullopt;
    size_t at = 19;
    nanoseconds fraction{0};
    if (text[at] == '.') {
        size_t start = ++at;
        int64_t value = 0;
        while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 9) {
            value = value * 10 + (text[at] - '0');
            ++at;
        }
        const size_t count = at - start;
        if (count == 0) return std::nullopt;
        // Go reads any number of digits and keeps nanoseconds.
        while (at < text.size() && text[at] >= '0' && text[at] <= '9') ++at;
        for (size_t i = count; i < 9; ++i) value *= 10;
        fraction = nanoseconds{value};
    }
    seconds offset{0};
    if (at < text.size() && text[at] == 'Z') {
        ++at;
    } else if (at < text.size() && (text[at] == '+' || text[at] == '-')) {
        const int oh = digits(text, at + 1, 2), om = digits(text, at + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59 || at + 3 >= text.size() ||
            text[at + 3] != ':') {
            return std::nullopt;
        }
        offset = hours{oh} + minutes{om};
        if (text[at] == '-') offset = -offset;
        at += 6;
    } else {
        return std::nullopt;
    }
    if (at != text.size()) return std::nullopt;
    const auto utc = sys_days{date} + hours{h} + minutes{mi} + seconds{s} - offset;
    // SystemTime counts nanoseconds in 64 bits (years 1678-2261): converting
    // a time outside would overflow (found by tests/fuzz/decode_fuzz.cpp).
    constexpr auto kLimit = duration_cast<seconds>(SystemTime::duration::max()) - seconds{1};
    if (utc.time_since_epoch() > kLimit || utc.time_since_epoch() < -kLimit) return std::nullopt;
    return time_point_cast<SystemTime::duration>(utc) + fraction;
}

std::string format_rfc3339_nano(SystemTime time) {
    using namespace std::chrono;
    const auto since_epoch = time.time_since_epoch();
    const auto whole = floor<seconds>(since_epoch);
    const auto nanos = duration_cast<nanoseconds>(since_epoch - whole);
    const std::time_t seconds_since_epoch = static_cast<std::time_t>(whole.count());
    std::tm utc{};
    gmtime_r(&seconds_since_epoch, &utc);
    char text[64];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
    std::string result = text;
    if (nanos.count() > 0) {
        std::string fraction = fmt::format("{:09d}", nanos.count());
        while (fraction.back() == '0') fraction.pop_back();
        result += "." + fraction;
    }
    return result + "Z";
}

}  // namespace sb
