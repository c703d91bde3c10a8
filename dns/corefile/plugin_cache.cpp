// CoreDNS's plugin/cache/setup.go: the `cache` block as a CacheConfig, and
// that CacheConfig as the cache's settings.
#include "dns/corefile/plugin_cache.h"

#include <fmt/format.h>

#include <span>

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
            if (auto s = context.count(o, 0, 2); !s) return s;
            std::chrono::milliseconds stale = std::chrono::hours(1);
            if (!o.args.empty()) {
                auto parsed = context.check(o, parse_duration(o.args[0]));
                if (!parsed) return parsed.error();
                stale = *parsed;
            }
            if (o.args.size() > 1 && o.args[1] != "immediate" && o.args[1] != "verify") {
                return context.at(o.line,
                                  fmt::format("serve_stale: {} is not one of immediate, verify",
                                              escaped_for_message(o.args[1])));
            }
            c.serve_stale = stale;
            c.serve_stale_verify = o.args.size() > 1 && o.args[1] == "verify";
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
            context.unsupported_option("cache", o);
        } else {
            return context.unknown_option("cache", o);
        }
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
