#include "dns/forward/cache_set.h"

#include <algorithm>

namespace sb::dns {

CacheSet::CacheSet(const std::vector<CacheBlock>& blocks) {
    for (const auto& block : blocks) {
        Block b;
        b.zones = block.zones;
        if (block.cache) {
            b.cache = std::make_unique<Cache>(*block.cache);
            b.cache_zones = block.cache_zones.empty() ? block.zones : block.cache_zones;
        }
        blocks_.push_back(std::move(b));
    }
}

std::unique_ptr<CacheSet> CacheSet::flags_default() {
    return std::make_unique<CacheSet>(std::vector<CacheBlock>{
        CacheBlock{{std::string(1, '\0')}, CacheSettings::flags_default(), {}}});
}

Cache* CacheSet::for_name(std::string_view lower_name) const {
    const Block* owner = nullptr;
    size_t longest = 0;
    for (const auto& block : blocks_) {
        for (const auto& zone : block.zones) {
            if ((owner == nullptr || zone.size() > longest) && name_is_under(lower_name, zone)) {
                owner = &block;
                longest = zone.size();
            }
        }
    }
    if (owner == nullptr || !owner->cache) return nullptr;
    bool covered =
        std::any_of(owner->cache_zones.begin(), owner->cache_zones.end(),
                    [&](const std::string& zone) { return name_is_under(lower_name, zone); });
    return covered ? owner->cache.get() : nullptr;
}

void CacheSet::append_metrics(metrics::TextWriter& out, const std::string& server) const {
    for (const auto& block : blocks_) {
        if (block.cache) block.cache->append_metrics(out, server);
    }
}

}  // namespace sb::dns
