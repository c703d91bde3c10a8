// The Corefile's `cache` plugins as the server's CacheSet blocks: one per
// server block on the served port, with the settings CoreDNS's cache plugin
// would have (docs/corefile.md, "cache"). The block's mapping, map_cache,
// is in plugin_cache.cpp too (declared in plugins.h).
//
// Thread safety: pure.
#pragma once

#include <vector>

#include "dns/corefile/server_config.h"
#include "dns/forward/cache_set.h"

namespace sb::dns {

// CoreDNS's cache settings for one `cache` (zones label included).
CacheSettings cache_settings(const CacheConfig& cache, const std::vector<std::string>& block_zones);

// Every server block of `config` on `cluster`'s port (the cluster block
// included), each with its cache if it has one.
std::vector<CacheBlock> corefile_cache_blocks(const CorefileConfig& config,
                                              const ServerConfig& cluster);

}  // namespace sb::dns
