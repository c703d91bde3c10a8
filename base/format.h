// Formatting the project's value types with fmt: every message is built with
// fmt::format (or a log call, which formats the same way), and a value type
// that has a text form says so once, next to its declaration:
//
//   template <> struct fmt::formatter<sb::IpAddress> : sb::FormatAsText<sb::IpAddress> {};
//
// after which fmt::format("{} is taken", address) writes address.to_string().
// Width and alignment work as for strings ("{:>15}").
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace sb {

// The text of a value: its to_string() member, or a to_string(value) found
// by argument-dependent lookup (the enums' "IPv4", "TCP", ...).
template <typename T>
auto text_for_format(const T& value) {
    if constexpr (requires { value.to_string(); }) {
        return value.to_string();
    } else {
        return to_string(value);
    }
}

// A fmt::formatter base that formats a value as its text, with the string
// format spec. Stateless and thread-safe.
template <typename T>
struct FormatAsText : fmt::formatter<std::string_view> {
    auto format(const T& value, fmt::format_context& context) const {
        const auto text = text_for_format(value);
        return fmt::formatter<std::string_view>::format(std::string_view(text), context);
    }
};

}  // namespace sb
