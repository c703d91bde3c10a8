// Cache: upstream answers for names outside the cluster zone, with the
// semantics of CoreDNS's cache plugin (docs/dns.md, "Cache"): a success
// store (answers, delegations) and a denial store (NXDOMAIN, NODATA and
// SERVFAIL), each with its own capacity and TTL bounds, sharded, evicting
// when a shard is full; expired entries optionally served stale.
//
// Each store is bounded in bytes as well as in entries (CoreDNS bounds
// entries only): an entry's bytes are its key, its records' heap and the
// containers' per-entry overhead (entry_bytes()), and each shard holds at
// most its share of the store's bytes, evicting as it does when full.
//
// Time is always the caller's `now` (tests step it by hand).
//
// Thread safety: every method may be called from any thread (one mutex per
// shard; counters are atomics).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/metrics.h"
#include "base/result.h"
#include "dns/wire/wire.h"

namespace sb::dns {

struct CachedAnswer {
    uint8_t rcode = 0;
    std::vector<Record> answers;
    std::vector<Record> authority;
    std::vector<Record> additional;
};

// An upstream's reply (or the error of a forward that failed) as the
// sections a reply to our client takes over.
Result<CachedAnswer> upstream_answer(Result<Message> upstream);

struct CacheSettings {
    enum class Eviction {
        kLeastRecent,  // the shard's least recently used entry
        kRandom,       // any entry of the shard (CoreDNS)
    };
    struct Store {
        size_t capacity = 10000;  // entries, over all shards
        uint32_t max_ttl = 30;    // seconds: caps how long an entry is kept
        uint32_t min_ttl = 0;     // seconds: an entry is kept at least this long
        // Bytes over all shards (each shard: its equal share); unset:
        // kDefaultEntryBytes per entry a shard holds, so that `success N`
        // scales the byte bound too. An entry larger than a shard's share
        // is not kept.
        std::optional<size_t> max_bytes;
    };
    // The byte budget per entry of a store without max_bytes: several times
    // a typical answer's footprint (a few records: 300-600 bytes), so
    // a store of ordinary answers fills by entries, never by bytes.
    static constexpr size_t kDefaultEntryBytes = 2048;
    Store success;
    Store denial;
    size_t shards = 1;
    Eviction eviction = Eviction::kLeastRecent;
    // How long SERVFAIL and NOTIMP replies are kept (denial store); 0: never.
    uint32_t servfail_ttl = 0;
    // Set: an NXDOMAIN without SOA, or a NOERROR with no record at all, is a
    // denial kept this long (switchboard's flags path). Unset: CoreDNS (an
    // NXDOMAIN without SOA is not kept; an empty NOERROR is a success).
    std::optional<uint32_t> soa_less_denial_ttl = 5;
    // Set: an entry expired for less than this is still served (TTL 0).
    std::optional<std::chrono::seconds> serve_stale;
    // With serve_stale: false (CoreDNS "immediate"): the stale answer is sent
    // at once and refreshed in the background, one refresh per entry at a
    // time; true ("verify"): the upstream is asked first.
    bool verify_stale = false;
    // Names at or under these zones (wire form, lower-case) are never stored
    // in that store.
    std::vector<std::string> disable_success;
    std::vector<std::string> disable_denial;
    // The `zones` label of the cache's metrics (CoreDNS: its zones joined by
    // ",", e.g. "." or "example.org.,example.net.").
    std::string zones_label = ".";

    // The --dns-* flags path: one LRU cache, 30 s at most, 10 000 entries
    // per store, denials without SOA kept 5 s, SERVFAIL never.
    static CacheSettings flags_default();
    // CoreDNS's defaults: 3600 s (success) and 1800 s (denial) at most, 5 s
    // at least, 256 shards of 39 entries per store, random eviction,
    // SERVFAIL kept 5 s.
    static CacheSettings coredns_default();
};

// What lookup() found.
struct CacheLookup {
    enum class Kind {
        kMiss,   // nothing usable: ask upstream, then store()
        kFresh,  // `answer` with TTLs aged to now
        kStale,  // expired within serve_stale: `answer` with TTLs 0
    };
    Kind kind = Kind::kMiss;
    CachedAnswer answer;
    // kStale, immediate mode: `answer` is sent now and this caller (the only
    // one until it calls refreshed()) asks upstream in the background.
    bool refresh = false;
    // kStale, verify mode: ask upstream and pass `answer` to complete() as
    // the stale fallback.
    bool verify = false;
};

class Cache {
  public:
    using Clock = std::chrono::steady_clock;

    explicit Cache(CacheSettings settings = CacheSettings::flags_default());
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;

    // Counts a request and a hit (by store) or a miss; an expired entry
    // beyond serve_stale is dropped.
    CacheLookup lookup(const Question& question, Clock::time_point now);

    // Stores an upstream reply for `question` when cacheable and returns what
    // the client is sent: the reply's sections, record TTLs clamped to what
    // the entry's lifetime is (CoreDNS caps a reply as it caches it).
    CachedAnswer store(const Question& question, Message reply, Clock::time_point now);

    // The answer for a forwarded question once the upstream answered (or
    // failed): stored as store() does. With `stale` (a kStale lookup in
    // verify mode), the stale answer is the result, counted as served stale,
    // unless the upstream refreshed the entry (NOERROR or NXDOMAIN).
    Result<CachedAnswer> complete(const Question& question, Result<Message> upstream,
                                  std::optional<CachedAnswer> stale, Clock::time_point now);

    // The end of the background refresh a kStale lookup asked for: a reply
    // that refreshes replaces the entry; anything else keeps the stale one
    // (and a later lookup may refresh again).
    void refreshed(const Question& question, Result<Message> upstream, Clock::time_point now);

    // CoreDNS's coredns_cache_* series of this cache, labelled `server`,
    // settings.zones_label and view "" (families announced by the first).
    void append_metrics(metrics::TextWriter& out, const std::string& server) const;

    enum Kind : size_t { kSuccess, kDenial, kKinds };
    uint64_t requests() const { return get(requests_); }
    uint64_t hits(Kind kind) const { return get(hits_[kind]); }
    uint64_t misses() const { return get(misses_); }
    uint64_t evictions(Kind kind) const { return get(evictions_[kind]); }
    uint64_t served_stale() const { return get(served_stale_); }
    uint64_t refreshes() const { return get(refreshes_); }
    // Replies not kept because their entry alone exceeds a shard's bytes.
    uint64_t too_large(Kind kind) const { return get(too_large_[kind]); }
    size_t size(Kind kind) const;
    size_t bytes(Kind kind) const;  // entry_bytes() summed over the store

  private:
    struct Entry {
        std::string key;
        CachedAnswer answer;  // record TTLs clamped to `ttl`
        Clock::time_point stored;
        uint32_t ttl = 0;  // seconds the entry is fresh
        bool refreshing = false;
        size_t bytes = 0;  // entry_bytes() when stored
    };
    using Index = std::unordered_map<std::string, std::list<Entry>::iterator>;
    struct Shard {
        mutable std::mutex mutex;
        std::list<Entry> entries;  // guarded by mutex; most recently used first
        Index index;               // guarded by mutex
        size_t bytes = 0;          // guarded by mutex: the entries' `bytes` summed
        uint64_t random = 0;       // guarded by mutex: picks the entry a full shard evicts
    };
    // How a reply is kept: its store and for how long (nullopt: not kept).
    struct Verdict {
        Kind kind = kSuccess;
        uint32_t ttl = 0;
    };

    // A shard's bytes: its share of store.max_bytes, else its entries' budget.
    size_t shard_byte_share(const CacheSettings::Store& store, size_t shard_capacity) const;
    static std::string key_of(const Question& question);
    static uint64_t get(const std::atomic<uint64_t>& counter) {
        return counter.load(std::memory_order_relaxed);
    }
    std::optional<Verdict> classify(const Question& question, const Message& reply) const;
    Shard& shard_of(Kind kind, const std::string& key);
    const Shard& shard_of(Kind kind, const std::string& key) const;
    // The entry of `key` in `kind`'s store, or null; the shard's mutex held.
    static Entry* find(Shard& shard, const std::string& key);
    static void erase(Shard& shard, const std::string& key);
    static void remove(Shard& shard, Index::iterator it);
    // The entry's footprint: its list node, its key twice (the index keeps a
    // copy) with the index's node and bucket, and every record's strings.
    static size_t entry_bytes(const Entry& entry);
    void insert(Kind kind, Entry entry);
    // Removes the entry a full shard gives up (settings_.eviction).
    void evict(Kind kind, Shard& shard);

    const CacheSettings settings_;
    const size_t shard_capacity_[kKinds];
    const size_t shard_bytes_[kKinds];
    std::vector<std::unique_ptr<Shard>> shards_[kKinds];
    std::atomic<uint64_t> requests_{0};
    std::atomic<uint64_t> hits_[kKinds] = {};
    std::atomic<uint64_t> misses_{0};
    std::atomic<uint64_t> evictions_[kKinds] = {};
    std::atomic<uint64_t> served_stale_{0};
    std::atomic<uint64_t> refreshes_{0};
    std::atomic<uint64_t> too_large_[kKinds] = {};
};

}  // namespace sb::dns
