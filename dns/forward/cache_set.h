// CacheSet: the caches of the DNS server and which one a forwarded name
// goes through, as CoreDNS picks them: the name belongs to the server block
// with the longest zone at or above it, and that block's `cache` serves it
// when the name is under the cache's zones. A block without `cache` caches
// nothing.
//
// Thread safety: immutable after construction; the caches are thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/metrics.h"
#include "dns/forward/cache.h"

namespace sb::dns {

// One server block as the cache set sees it.
struct CacheBlock {
    std::vector<std::string> zones;  // the block's zones: wire form, lower-case
    // Its cache's settings, or none when the block has no `cache`.
    std::optional<CacheSettings> cache;
    std::vector<std::string> cache_zones;  // wire form, lower-case; empty: `zones`
};

class CacheSet {
  public:
    explicit CacheSet(const std::vector<CacheBlock>& blocks);
    // The --dns-* flags path: one cache (CacheSettings::flags_default()) for
    // every name.
    static std::unique_ptr<CacheSet> flags_default();

    // The cache `lower_name` (wire form, lower-case) goes through, or null.
    Cache* for_name(std::string_view lower_name) const;
    // Every cache's coredns_cache_* series, `server` as the server's label.
    void append_metrics(metrics::TextWriter& out, const std::string& server) const;

  private:
    struct Block {
        std::vector<std::string> zones;
        std::unique_ptr<Cache> cache;
        std::vector<std::string> cache_zones;
    };
    std::vector<Block> blocks_;
};

}  // namespace sb::dns
