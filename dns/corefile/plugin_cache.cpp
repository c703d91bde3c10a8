// CoreDNS's plugin/cache/setup.go: the `cache` block as a CacheConfig, and
// that CacheConfig as the cache's settings.
#include "dns/corefile/plugin_cache.h"

#include <fmt/format.h>

#include <span>

#include "base/go_duration.h"
#include "dns/corefile/config.h"
#include "dns/corefile/plugins.h"

namespace sb::dns {

namespace {

// success|denial CAPACITY [TTL [MINTTL]]
Status cache_kind(const CorefileDirective& o, uint32_t& capacity, std::optional<uint32_t>& ttl,
                  std::optional<uint32_t>& min_ttl, const MapContext& context) {
    if (auto s = context.count(o, 1, 3); !s) return s;
    auto c = context.check(o, parse_number(o.args[0], 0, INT32_MAX));
    if (!c) return c.error();
    capacity = *c;
    if (o.args.size() > 1) {
        auto t = context.check(o, parse_number(o.args[1], 1, INT32_MAX));
        if (!t) return t.error();
        ttl = *t;
    }
    if (o.args.size() > 2) {
        auto m = context.check(o, parse_number(o.args[2], 0, INT32_MAX));
        if (!m) return m.error();
        min_ttl = *m;
    }
    return {};
}

// `disable KIND [ZONES]`: no zones means every name.
std::vector<std::string> disabled_zones(const std::optional<std::vector<std::string>>& zones) {
    if (!zones) return {};
    if (zones->empty()) return {std::string(1, '\0')};
    return wire_zones(*zones);
}

// `text` lower-cased (ASCII), as Go's strings.ToLower reads the keywords.
std::string lowered(std::string_view text) {
    std::string out(text);
    for (char& ch : out) {
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
    return out;
}

// One Go duration of serve_stale's arguments, not negative.
Result<std::chrono::nanoseconds> stale_duration(const CorefileDirective& o, std::string_view text,
                                                std::string_view what, const MapContext& context) {
    auto parsed = parse_go_duration(text);
    if (!parsed) {
        return context.at(
            o.line, fmt::format("serve_stale: invalid {} {}", what, escaped_for_message(text)));
    }
    if (parsed->count() < 0) {
        return context.at(
            o.line, fmt::format("serve_stale: negative {} {}", what, escaped_for_message(text)));
    }
    return *parsed;
}

// `serve_stale [DURATION [immediate [RESPONSE_TTL [FAILURE_RECHECK]] |
// verify [VERIFY_TIMEOUT [RESPONSE_TTL [FAILURE_RECHECK]]]]]`, checked as
// CoreDNS 1.14's cacheParse does (the mode in any case). The cache serves
// stale answers with TTL 0, waits for the upstream's own timeout and
// retries a failed refresh at once: VERIFY_TIMEOUT, RESPONSE_TTL and
// FAILURE_RECHECK are honoured at 0, their default, and refused otherwise
// (each would change an answer's TTL or when the upstream is asked).
Status serve_stale(const CorefileDirective& o, CacheConfig& c, const MapContext& context) {
    if (auto s = context.count(o, 0, 5); !s) return s;
    std::chrono::nanoseconds up_to = std::chrono::hours(1);
    if (!o.args.empty()) {
        auto parsed = stale_duration(o, o.args[0], "DURATION", context);
        if (!parsed) return parsed.error();
        up_to = *parsed;
    }
    bool verify = false;
    if (o.args.size() > 1) {
        const std::string mode = lowered(o.args[1]);
        if (mode != "immediate" && mode != "verify") {
            return context.at(o.line, fmt::format("serve_stale: {} is not one of immediate, verify",
                                                  escaped_for_message(o.args[1])));
        }
        verify = mode == "verify";
    }
    // After the mode: verify's VERIFY_TIMEOUT, then RESPONSE_TTL, then
    // FAILURE_RECHECK; immediate has no VERIFY_TIMEOUT (so 4 arguments at most).
    if (!verify && o.args.size() > 4) return context.count(o, 0, 4);
    static constexpr std::string_view kVerifyNames[] = {"VERIFY_TIMEOUT", "RESPONSE_TTL",
                                                        "FAILURE_RECHECK"};
    std::span<const std::string_view> names(kVerifyNames);
    if (!verify) names = names.subspan(1);
    for (size_t i = 2; i < o.args.size(); ++i) {
        const std::string_view what = names[i - 2];
        auto value = stale_duration(o, o.args[i], what, context);
        if (!value) return value.error();
        if (what == "RESPONSE_TTL" &&
            (*value % std::chrono::seconds(1) != std::chrono::nanoseconds(0) ||
             std::chrono::duration_cast<std::chrono::seconds>(*value).count() > UINT32_MAX)) {
            return context.at(o.line, fmt::format("serve_stale: RESPONSE_TTL {} is not a whole "
                                                  "number of seconds in the DNS TTL range",
                                                  escaped_for_message(o.args[i])));
        }
        if (what == "FAILURE_RECHECK" && *value > std::chrono::minutes(5)) {
            return context.at(o.line, "serve_stale: FAILURE_RECHECK cannot exceed 5 minutes");
        }
        if (value->count() != 0) {
            return context.at(o.line, fmt::format("serve_stale: a {} other than 0 is not "
                                                  "supported (stale answers have TTL 0 and a "
                                                  "refresh waits for the upstream)",
                                                  what));
        }
    }
    c.serve_stale = std::chrono::duration_cast<std::chrono::milliseconds>(up_to);
    c.serve_stale_verify = verify;
    return {};
}

// prefetch AMOUNT [DURATION [PERCENTAGE%]], servfail DURATION (0-5m) and
// keepttl: not acted on, but a value CoreDNS refuses is refused here too.
Status check_unsupported(const CorefileDirective& o, const MapContext& context) {
    if (o.name == "keepttl") return context.count(o, 0, 0);
    if (o.name == "servfail") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        auto ttl = context.check(o, parse_duration(o.args[0]));
        if (!ttl) return ttl.error();
        if (*ttl > std::chrono::minutes(5)) {
            return context.at(o.line, "servfail: caching SERVFAIL over 5 minutes is not permitted");
        }
        return {};
    }
    if (auto s = context.count(o, 1, 3); !s) return s;
    if (auto amount = context.check(o, parse_number(o.args[0], 0, INT32_MAX)); !amount) {
        return amount.error();
    }
    if (o.args.size() > 1) {
        if (auto d = context.check(o, parse_go_duration(o.args[1])); !d) return d.error();
    }
    if (o.args.size() > 2) {
        const std::string& pct = o.args[2];
        auto number = pct.empty() || pct.back() != '%'
                          ? Result<uint32_t>(invalid_argument("a PERCENTAGE ends in %"))
                          : parse_number(std::string_view(pct).substr(0, pct.size() - 1), 10, 90);
        if (!number) {
            return context.at(o.line, fmt::format("prefetch: {}: {}", escaped_for_message(pct),
                                                  number.error().message));
        }
    }
    return {};
}

// `serve_stale_policy prefer_positive` (any case), once; `line` is set to
// its line. Whether serve_stale is there is known after the whole block.
Status serve_stale_policy(const CorefileDirective& o, int& line, const MapContext& context) {
    if (line != 0) {
        return context.at(o.line, fmt::format("serve_stale_policy can only be specified once "
                                              "(also at line {})",
                                              line));
    }
    if (auto s = context.count(o, 1, 1); !s) return s;
    if (lowered(o.args[0]) != "prefer_positive") {
        return context.at(o.line, fmt::format("serve_stale_policy: {} is not prefer_positive",
                                              escaped_for_message(o.args[0])));
    }
    line = o.line;
    return {};
}

}  // namespace

Status map_cache(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    CacheConfig c;
    c.line = d.line;
    std::span<const std::string> rest(d.args);
    // As CoreDNS: a first argument that is an integer is the TTL,
    // anything else (10.0.0.0/8 included) is a zone.
    bool integer = !rest.empty() && !rest[0].empty() &&
                   rest[0].find_first_not_of("-0123456789") == std::string::npos;
    if (integer) {
        auto ttl = context.check(d, parse_number(rest[0], 1, INT32_MAX));
        if (!ttl) return ttl.error();
        c.max_ttl = *ttl;
        rest = rest.subspan(1);
    }
    auto zones = context.zones_of(d, rest);
    if (!zones) return zones.error();
    c.zones = std::move(*zones);
    int stale_policy_line = 0;
    for (const auto& o : d.block) {
        if (o.name == "success") {
            if (auto s =
                    cache_kind(o, c.success_capacity, c.success_ttl, c.success_min_ttl, context);
                !s)
                return s;
        } else if (o.name == "denial") {
            if (auto s = cache_kind(o, c.denial_capacity, c.denial_ttl, c.denial_min_ttl, context);
                !s)
                return s;
        } else if (o.name == "serve_stale") {
            if (auto s = serve_stale(o, c, context); !s) return s;
        } else if (o.name == "serve_stale_policy") {
            if (auto s = serve_stale_policy(o, stale_policy_line, context); !s) return s;
        } else if (o.name == "disable") {
            if (auto s = context.count(o, 1, SIZE_MAX); !s) return s;
            if (o.args[0] != "success" && o.args[0] != "denial") {
                return context.at(o.line, fmt::format("disable: {} is not one of success, denial",
                                                      escaped_for_message(o.args[0])));
            }
            auto disabled = context.zones_of(o, std::span<const std::string>(o.args).subspan(1));
            if (!disabled) return disabled.error();
            (o.args[0] == "success" ? c.disable_success : c.disable_denial) = std::move(*disabled);
        } else if (o.name == "prefetch" || o.name == "servfail" || o.name == "keepttl") {
            if (auto s = check_unsupported(o, context); !s) return s;
            context.unsupported_option("cache", o);
        } else {
            return context.unknown_option("cache", o);
        }
    }
    if (stale_policy_line != 0 && !c.serve_stale) {
        return context.at(stale_policy_line, "serve_stale_policy requires serve_stale");
    }
    if (stale_policy_line != 0) {
        return context.at(stale_policy_line,
                          "serve_stale_policy prefer_positive is not supported (a cached denial is "
                          "answered before a stale positive answer)");
    }
    server.cache = std::move(c);
    return {};
}

CacheSettings cache_settings(const CacheConfig& cache,
                             const std::vector<std::string>& block_zones) {
    CacheSettings s = CacheSettings::coredns_default();
    // As CoreDNS's setup: `cache TTL` first, `success`/`denial` override it.
    if (cache.max_ttl) s.success.max_ttl = s.denial.max_ttl = *cache.max_ttl;
    s.success.capacity = cache.success_capacity;
    s.success.max_ttl = cache.success_ttl.value_or(s.success.max_ttl);
    s.success.min_ttl = cache.success_min_ttl.value_or(s.success.min_ttl);
    s.denial.capacity = cache.denial_capacity;
    s.denial.max_ttl = cache.denial_ttl.value_or(s.denial.max_ttl);
    s.denial.min_ttl = cache.denial_min_ttl.value_or(s.denial.min_ttl);
    if (cache.serve_stale) {
        // CoreDNS compares whole seconds.
        s.serve_stale = std::chrono::duration_cast<std::chrono::seconds>(*cache.serve_stale);
        s.verify_stale = cache.serve_stale_verify;
    }
    s.disable_success = disabled_zones(cache.disable_success);
    s.disable_denial = disabled_zones(cache.disable_denial);
    const std::vector<std::string>& zones = cache.zones.empty() ? block_zones : cache.zones;
    s.zones_label.clear();
    for (const auto& zone : zones) s.zones_label += (s.zones_label.empty() ? "" : ",") + zone;
    return s;
}

std::vector<CacheBlock> corefile_cache_blocks(const CorefileConfig& config,
                                              const ServerConfig& cluster) {
    std::vector<CacheBlock> blocks;
    for (const auto& server : config.servers) {
        if (server.port != cluster.port) continue;
        CacheBlock block;
        block.zones = wire_zones(server.zones);
        if (server.cache) {
            block.cache = cache_settings(*server.cache, server.zones);
            block.cache_zones = wire_zones(server.cache->zones);
        }
        blocks.push_back(std::move(block));
    }
    return blocks;
}

}  // namespace sb::dns
