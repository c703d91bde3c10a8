#include "proxy/options/value_checks.h"

#include <fmt/format.h>

#include "base/quote.h"
#include "base/text.h"
#include "proxy/options/command_line.h"

namespace sb::proxy {

Error invalid_value(std::string message) {
    return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

Status check_one_of(std::string_view value, std::initializer_list<std::string_view> allowed) {
    for (auto candidate : allowed) {
        if (value == candidate) return {};
    }
    std::string list;
    for (auto candidate : allowed) {
        if (!list.empty()) list += ", ";
        list += candidate;
    }
    return invalid_value(fmt::format("{} is not one of {}", quote_for_message(value), list));
}

Result<std::vector<Prefix>> parse_prefix_list(std::string_view text) {
    std::vector<Prefix> prefixes;
    for (const auto& item : split_list(text)) {
        auto prefix = Prefix::parse(item, /*allow_host_bits=*/true);
        if (!prefix) return invalid_value(fmt::format("{} is not a CIDR", quote_for_message(item)));
        prefixes.push_back(*prefix);
    }
    return prefixes;
}

Result<bool> parse_bool_value(std::string_view text) {
    auto value = parse_bool_text(text);
    if (!value) {
        return invalid_value(
            fmt::format("{} is not a boolean (true or false)", quote_for_message(text)));
    }
    return *value;
}

}  // namespace sb::proxy
