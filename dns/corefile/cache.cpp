#include "dns/corefile/cache.h"

namespace sb::dns {

namespace {

// `disable KIND [ZONES]`: no zones means every name.
std::vector<std::string> disabled_zones(const std::optional<std::vector<std::string>>& zones) {
    if (!zones) return {};
    if (zones->empty()) return {std::string(1, '\0')};
    return wire_zones(*zones);
}

}  // namespace

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
