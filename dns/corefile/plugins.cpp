#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <utility>

#include "base/go_duration.h"
#include "base/text.h"

namespace sb::dns {

Error invalid_argument(std::string why) {
    return make_error(ErrorCode::kInvalidArgument, std::move(why));
}

Result<uint32_t> parse_number(std::string_view text, int64_t min, int64_t max) {
    auto value = parse_integer(text, min, max);
    if (!value) return value.error();
    return static_cast<uint32_t>(*value);
}

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
    auto parsed = parse_go_duration(text);
    if (!parsed) {
        return invalid_argument(
            fmt::format("{} is not a duration (e.g. 500ms, 5s, 1m30s)", escaped_for_message(text)));
    }
    if (parsed->count() < 0) {
        return invalid_argument(fmt::format("{} is negative", escaped_for_message(text)));
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(*parsed);
}

Error MapContext::at(int line, const std::string& why) const {
    return invalid_argument(fmt::format("{}:{}: {}", path_, line, why));
}

void MapContext::warn(int line, const std::string& what) {
    warnings_.push_back(fmt::format("{}:{}: {}", path_, line, what));
}

void MapContext::warn_once(const std::string& key, int line, const std::string& what) {
    if (warned_.insert(key).second) warn(line, what);
}

void MapContext::unsupported_option(std::string_view plugin, const CorefileDirective& option) {
    warn(option.line, fmt::format("{} option {} is not supported; ignored", plugin,
                                  escaped_for_message(option.name)));
}

Status MapContext::unknown_option(std::string_view plugin, const CorefileDirective& option) const {
    return at(option.line,
              fmt::format("{}: unknown property {}", plugin, escaped_for_message(option.name)));
}

Status MapContext::count(const CorefileDirective& directive, size_t min, size_t max) const {
    size_t n = directive.args.size();
    if (n >= min && n <= max) return {};
    std::string wanted = min == max        ? fmt::format("{}", min)
                         : max == SIZE_MAX ? fmt::format("at least {}", min)
                                           : fmt::format("{}-{}", min, max);
    return at(directive.line,
              fmt::format("{}: wrong argument count ({}, wants {})", directive.name, n, wanted));
}

Status MapContext::no_block(const CorefileDirective& directive) const {
    if (!directive.has_block) return {};
    return at(directive.line, fmt::format("{} takes no {{ }} block", directive.name));
}

Result<std::vector<std::string>> MapContext::zones_of(const CorefileDirective& directive,
                                                      std::span<const std::string> args) const {
    std::vector<std::string> zones;
    for (const auto& arg : args) {
        auto zone = check(directive, normalize_zone(arg));
        if (!zone) return zone.error();
        zones.push_back(zone->zone);
    }
    return zones;
}

Result<Fallthrough> MapContext::fallthrough(const CorefileDirective& option) const {
    auto zones = zones_of(option, option.args);
    if (!zones) return zones.error();
    return Fallthrough{std::move(*zones)};
}

}  // namespace sb::dns
