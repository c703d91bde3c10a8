#include "base/go_duration.h"

#include <fmt/format.h>

#include <cctype>
#include <cstdint>

#include "base/quote.h"

namespace sb {

using std::chrono::nanoseconds;

Result<nanoseconds> parse_go_duration(std::string_view text) {
    auto bad = [&](const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{} is not a duration ({}; e.g. 500ms, 1s, 1m30s)",
                                      quote_for_message(text), why));
    };
    constexpr uint64_t kMax = uint64_t{1} << 63;  // |min int64|
    std::string_view s = text;
    bool negative = false;
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
        negative = s.front() == '-';
        s.remove_prefix(1);
    }
    if (s == "0") return nanoseconds(0);
    if (s.empty()) return bad("empty");
    uint64_t total = 0;
    while (!s.empty()) {
        if (s.front() != '.' && !std::isdigit(static_cast<unsigned char>(s.front()))) {
            return bad("expected a number");
        }
        uint64_t whole = 0;
        size_t i = 0;
        for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
            if (whole > (kMax - 9) / 10) return bad("overflow");
            whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
        }
        bool has_whole = i > 0;
        s.remove_prefix(i);
        uint64_t fraction = 0;
        double scale = 1;
        bool has_fraction = false;
        if (!s.empty() && s.front() == '.') {
            s.remove_prefix(1);
            size_t j = 0;
            for (; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {
                // Digits beyond what fits are dropped, as Go does.
                if (fraction <= (kMax - 9) / 10) {
                    fraction = fraction * 10 + static_cast<uint64_t>(s[j] - '0');
                    scale *= 10;
                }
            }
            has_fraction = j > 0;
            s.remove_prefix(j);
        }
        if (!has_whole && !has_fraction) return bad("expected a number");
        size_t unit_length = 0;
        while (unit_length < s.size() && s[unit_length] != '.' &&
               !std::isdigit(static_cast<unsigned char>(s[unit_length]))) {
            ++unit_length;
        }
        if (unit_length == 0) return bad("missing unit");
        std::string_view unit_text = s.substr(0, unit_length);
        s.remove_prefix(unit_length);
        uint64_t unit = 0;
        if (unit_text == "ns") {
            unit = 1;
        } else if (unit_text == "us" || unit_text == "\u00b5s" || unit_text == "\u03bcs") {
            unit = 1'000;
        } else if (unit_text == "ms") {
            unit = 1'000'000;
        } else if (unit_text == "s") {
            unit = 1'000'000'000;
        } else if (unit_text == "m") {
            unit = 60'000'000'000;
        } else if (unit_text == "h") {
            unit = 3'600'000'000'000;
        } else {
            return bad(fmt::format("unknown unit {}", quote_for_message(unit_text)));
        }
        if (whole > kMax / unit) return bad("overflow");
        uint64_t value = whole * unit;
        if (fraction > 0) {
            value += static_cast<uint64_t>(static_cast<double>(fraction) *
                                           (static_cast<double>(unit) / scale));
            if (value > kMax) return bad("overflow");
        }
        total += value;
        if (total > kMax) return bad("overflow");
    }
    if (negative) return nanoseconds(static_cast<int64_t>(0 - total));
    if (total > kMax - 1) return bad("overflow");
    return nanoseconds(static_cast<int64_t>(total));
}

std::string format_go_duration(nanoseconds duration) {
    int64_t ns = duration.count();
    if (ns == 0) return "0s";
    std::string sign = ns < 0 ? "-" : "";
    uint64_t value = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    // "1.5" from value/unit with trailing zeros dropped.
    auto decimal = [](uint64_t amount, uint64_t unit) {
        std::string text = std::to_string(amount / unit);
        uint64_t rest = amount % unit;
        if (rest == 0) return text;
        std::string digits = std::to_string(unit + rest).substr(1);
        while (!digits.empty() && digits.back() == '0') digits.pop_back();
        return text + "." + digits;
    };
    if (value < 1'000) return sign + std::to_string(value) + "ns";
    if (value < 1'000'000) return sign + decimal(value, 1'000) + "\u00b5s";
    if (value < 1'000'000'000) return sign + decimal(value, 1'000'000) + "ms";
    uint64_t hours = value / 3'600'000'000'000;
    uint64_t minutes = value / 60'000'000'000 % 60;
    std::string seconds = decimal(value % 60'000'000'000, 1'000'000'000) + "s";
    if (hours > 0)
        return sign + std::to_string(hours) + "h" + std::to_string(minutes) + "m" + seconds;
    if (minutes > 0) return sign + std::to_string(minutes) + "m" + seconds;
    return sign + seconds;
}

}  // namespace sb
