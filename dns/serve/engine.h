// What every serving thread answers with: the published zone and the
// published QueryEngine (upstreams, cache, query log, policies). The server,
// its workers, their UDP loops and the query dispatcher share these; the
// DnsService publishes them.
//
// Thread safety: both holders are Published<T> (base/containers/published.h): any
// thread reads, writers replace whole.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "base/containers/published.h"
#include "dns/forward/cache_set.h"
#include "dns/forward/forward.h"
#include "dns/search_path/autopath.h"
#include "dns/serve/query_log.h"
#include "dns/zone/resolver.h"
#include "dns/zone/zone.h"

namespace sb::dns {

// The published zone: writers replace it whole, readers take a reference.
using ZoneHolder = Published<Zone>;

// What queries are served with besides the zone: the upstreams, the cache
// and the query log. Published whole and replaced whole by a Corefile
// reload (DnsService::reconfigure); the forwarder and cache are thread-safe.
// A replaced engine keeps serving the forwards it started: its owner stops
// its forwarder only once `in_flight` is 0.
struct QueryEngine {
    std::unique_ptr<Forwarder> forwarder;  // null: no upstream, other zones REFUSED
    std::unique_ptr<CacheSet> caches;      // set with the forwarder
    QueryLogConfig query_log;
    ClusterPolicy cluster;  // the kubernetes plugin's reverse zones and fallthrough
    AnswerShuffle shuffle = AnswerShuffle::kZoneAnswers;
    AutopathPolicy autopath;  // the server-side search path: on or off, the node's domains
    // Forwards submitted whose callback has not returned yet.
    mutable std::atomic<uint64_t> in_flight{0};
};

using EngineHolder = Published<QueryEngine>;

}  // namespace sb::dns
