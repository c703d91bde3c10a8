#include "dns/forward/cache.h"

#include <algorithm>

#include "base/containers/allocation_overhead.h"

namespace sb::dns {

namespace {

// CoreDNS's dnsutil.MinimalDefaultTTL: what a reply with no record at all
// is kept for, and the default minimum TTL.
constexpr uint32_t kMinimalDefaultTtl = 5;
// A shard never holds fewer (CoreDNS: "the minimum allowed cache size is
// 1024" over 256 shards).
constexpr size_t kMinShardCapacity = 4;

bool class_matches(uint16_t record_class, uint16_t qclass) {
    return qclass == kClassANY || record_class == qclass;
}

// CoreDNS's answersQuestion: the answer section holds the queried type at
// the end of the CNAME chain that starts at the question's name (any record
// at the name for ANY; the name's one CNAME for CNAME). A malformed chain
// (two targets for one owner, a loop) answers nothing.
bool answers_question(const Question& question, const std::vector<Record>& answers) {
    std::string name = name_lower(question.name);
    auto at = [&](const Record& r) {
        return class_matches(r.rclass, question.qclass) && name_lower(r.name) == name;
    };
    if (question.qtype == type::kANY) return std::any_of(answers.begin(), answers.end(), at);
    // Each step moves to a new owner: more steps than records is a loop.
    for (size_t step = 0; step <= answers.size(); ++step) {
        std::optional<std::string> target;
        for (const auto& r : answers) {
            if (r.rtype != type::kCNAME || !at(r)) continue;
            std::string lower = name_lower(r.rdata);
            if (target && *target != lower) return false;
            target = std::move(lower);
        }
        if (question.qtype == type::kCNAME) return target.has_value();
        if (!target) {
            return std::any_of(answers.begin(), answers.end(),
                               [&](const Record& r) { return r.rtype == question.qtype && at(r); });
        }
        name = std::move(*target);
    }
    return false;
}

// The smallest TTL of the reply's records (an SOA's counts as RFC 2308's
// min(TTL, MINIMUM)), at most `cap`; kMinimalDefaultTtl without records.
uint32_t minimal_ttl(const Message& reply, uint32_t cap) {
    if (reply.answers.empty() && reply.authority.empty() && reply.additional.empty()) {
        return kMinimalDefaultTtl;
    }
    uint32_t ttl = cap;
    for (const auto* section : {&reply.answers, &reply.authority, &reply.additional}) {
        for (const auto& record : *section) {
            uint32_t record_ttl = record.ttl;
            if (record.rtype == type::kSOA) {
                record_ttl = std::min(record_ttl, soa_minimum(record.rdata).value_or(record_ttl));
            }
            ttl = std::min(ttl, record_ttl);
        }
    }
    return ttl;
}

// CoreDNS's verifyStaleResponseWriter: a reply that replaces a stale entry.
bool replaces_stale(const Message& reply) {
    if (reply.header.tc || (reply.edns && reply.edns->extended_rcode != 0)) return false;
    auto rcode = static_cast<Rcode>(reply.header.rcode);
    return rcode == Rcode::kNoError || (rcode == Rcode::kNXDomain && reply.answers.empty());
}

bool under_any(const std::string& lower_name, const std::vector<std::string>& zones) {
    return std::any_of(zones.begin(), zones.end(),
                       [&](const std::string& zone) { return name_is_under(lower_name, zone); });
}

// The heap bytes `text` owns: none when its characters live inside the
// object (the small-string buffer).
size_t heap_bytes(const std::string& text) {
    const char* object = reinterpret_cast<const char*>(&text);
    if (text.data() >= object && text.data() < object + sizeof(text)) return 0;
    return text.capacity() + 1 + kAllocationOverhead;
}

size_t heap_bytes(const std::vector<Record>& records) {
    if (records.capacity() == 0) return 0;
    size_t bytes = records.capacity() * sizeof(Record) + kAllocationOverhead;
    for (const auto& record : records) bytes += heap_bytes(record.name) + heap_bytes(record.rdata);
    return bytes;
}

uint64_t fnv1a(const std::string& bytes) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (unsigned char c : bytes) hash = (hash ^ c) * 0x100000001b3ull;
    return hash;
}

}  // namespace

Result<CachedAnswer> upstream_answer(Result<Message> upstream) {
    if (!upstream) return upstream.error();
    CachedAnswer answer;
    answer.rcode = upstream->header.rcode;
    answer.answers = std::move(upstream->answers);
    answer.authority = std::move(upstream->authority);
    answer.additional = std::move(upstream->additional);
    return answer;
}

CacheSettings CacheSettings::flags_default() {
    return CacheSettings{};
}

CacheSettings CacheSettings::coredns_default() {
    CacheSettings s;
    s.success = {9984, 3600, kMinimalDefaultTtl, std::nullopt};
    s.denial = {9984, 1800, kMinimalDefaultTtl, std::nullopt};
    s.shards = 256;
    s.eviction = Eviction::kRandom;
    s.servfail_ttl = kMinimalDefaultTtl;
    s.soa_less_denial_ttl.reset();
    return s;
}

Cache::Cache(CacheSettings settings)
    : settings_(std::move(settings)),
      shard_capacity_{std::max(settings_.success.capacity / std::max<size_t>(settings_.shards, 1),
                               kMinShardCapacity),
                      std::max(settings_.denial.capacity / std::max<size_t>(settings_.shards, 1),
                               kMinShardCapacity)},
      shard_bytes_{shard_byte_share(settings_.success, shard_capacity_[kSuccess]),
                   shard_byte_share(settings_.denial, shard_capacity_[kDenial])} {
    for (auto& shards : shards_) {
        for (size_t i = 0; i < std::max<size_t>(settings_.shards, 1); ++i) {
            shards.push_back(std::make_unique<Shard>());
            shards.back()->random = 0x9e3779b97f4a7c15ull ^ i;
        }
    }
}

size_t Cache::shard_byte_share(const CacheSettings::Store& store, size_t shard_capacity) const {
    if (!store.max_bytes) return shard_capacity * CacheSettings::kDefaultEntryBytes;
    return *store.max_bytes / std::max<size_t>(settings_.shards, 1);
}

std::string Cache::key_of(const Question& question) {
    std::string key = name_lower(question.name);
    key.push_back(static_cast<char>(question.qtype >> 8));
    key.push_back(static_cast<char>(question.qtype & 0xff));
    key.push_back(static_cast<char>(question.qclass >> 8));
    key.push_back(static_cast<char>(question.qclass & 0xff));
    return key;
}

Cache::Shard& Cache::shard_of(Kind kind, const std::string& key) {
    return *shards_[kind][fnv1a(key) % shards_[kind].size()];
}

const Cache::Shard& Cache::shard_of(Kind kind, const std::string& key) const {
    return *shards_[kind][fnv1a(key) % shards_[kind].size()];
}

Cache::Entry* Cache::find(Shard& shard, const std::string& key) {
    auto it = shard.index.find(key);
    return it == shard.index.end() ? nullptr : &*it->second;
}

void Cache::erase(Shard& shard, const std::string& key) {
    auto it = shard.index.find(key);
    if (it != shard.index.end()) remove(shard, it);
}

void Cache::remove(Shard& shard, Index::iterator it) {
    shard.bytes -= it->second->bytes;
    shard.entries.erase(it->second);
    shard.index.erase(it);
}

size_t Cache::entry_bytes(const Entry& entry) {
    // std::list node: two links; unordered_map node: a link, the key, the
    // list iterator and the cached hash, plus a bucket pointer.
    constexpr size_t kListNode = 2 * sizeof(void*) + sizeof(Entry) + kAllocationOverhead;
    constexpr size_t kIndexNode = sizeof(void*) + sizeof(Index::value_type) + sizeof(size_t) +
                                  kAllocationOverhead + sizeof(void*);
    return kListNode + kIndexNode + 2 * heap_bytes(entry.key) + heap_bytes(entry.answer.answers) +
           heap_bytes(entry.answer.authority) + heap_bytes(entry.answer.additional);
}

std::optional<Cache::Verdict> Cache::classify(const Question& question,
                                              const Message& reply) const {
    if (reply.header.tc || reply.header.opcode != 0) return std::nullopt;
    if (reply.edns && reply.edns->extended_rcode != 0) return std::nullopt;
    if (question.qtype == type::kAXFR || question.qtype == type::kIXFR) return std::nullopt;
    auto rcode = static_cast<Rcode>(reply.header.rcode);
    bool soa = std::any_of(reply.authority.begin(), reply.authority.end(),
                           [](const Record& r) { return r.rtype == type::kSOA; });
    // CoreDNS's response.Typify, in its order, with the cache's own rules
    // for SOA-less denials and CNAME chains that answer nothing.
    std::optional<Kind> kind;
    bool soa_less = false;
    if (!reply.answers.empty() && rcode == Rcode::kNoError) {
        if (answers_question(question, reply.answers)) {
            kind = kSuccess;
        } else if (soa) {
            kind = kDenial;  // NODATA at the end of a CNAME chain
        } else {
            return std::nullopt;  // an incomplete chain: ask again next time
        }
    } else if (!reply.answers.empty() && rcode == Rcode::kNXDomain) {
        return std::nullopt;
    } else if (soa && (rcode == Rcode::kNoError || rcode == Rcode::kNXDomain)) {
        kind = kDenial;
    } else if (rcode == Rcode::kServFail || rcode == Rcode::kNotImp) {
        if (settings_.servfail_ttl == 0 ||
            under_any(name_lower(question.name), settings_.disable_denial)) {
            return std::nullopt;
        }
        return Verdict{kDenial, settings_.servfail_ttl};
    } else if (rcode == Rcode::kNXDomain || rcode == Rcode::kNoError) {
        // No SOA: an NXDOMAIN, or a NOERROR without answers (a delegation
        // or no record at all).
        if (settings_.soa_less_denial_ttl) {
            kind = kDenial;
            soa_less = true;
        } else if (rcode == Rcode::kNoError) {
            kind = kSuccess;
        } else {
            return std::nullopt;
        }
    } else {
        return std::nullopt;
    }
    const CacheSettings::Store& store = *kind == kSuccess ? settings_.success : settings_.denial;
    uint32_t message_ttl =
        soa_less ? *settings_.soa_less_denial_ttl : minimal_ttl(reply, store.max_ttl);
    uint32_t ttl = std::min(std::max(message_ttl, store.min_ttl), store.max_ttl);
    const auto& disabled = *kind == kSuccess ? settings_.disable_success : settings_.disable_denial;
    if (ttl == 0 || under_any(name_lower(question.name), disabled)) return std::nullopt;
    return Verdict{*kind, ttl};
}

CacheLookup Cache::lookup(const Question& question, Clock::time_point now) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    std::string key = key_of(question);
    CacheLookup found;
    // The denial store first, as CoreDNS.
    for (Kind kind : {kDenial, kSuccess}) {
        Shard& shard = shard_of(kind, key);
        std::lock_guard lock(shard.mutex);
        auto it = shard.index.find(key);
        if (it == shard.index.end()) continue;
        Entry& entry = *it->second;
        int64_t age =
            now > entry.stored
                ? std::chrono::duration_cast<std::chrono::seconds>(now - entry.stored).count()
                : 0;
        int64_t remaining = static_cast<int64_t>(entry.ttl) - age;
        if (remaining <= 0 &&
            !(settings_.serve_stale && -remaining < settings_.serve_stale->count())) {
            remove(shard, it);
            continue;
        }
        shard.entries.splice(shard.entries.begin(), shard.entries, it->second);
        hits_[kind].fetch_add(1, std::memory_order_relaxed);
        found.answer = entry.answer;
        for (auto* section :
             {&found.answer.answers, &found.answer.authority, &found.answer.additional}) {
            for (auto& record : *section) {
                record.ttl =
                    remaining > 0 && record.ttl > age ? record.ttl - static_cast<uint32_t>(age) : 0;
            }
        }
        if (remaining > 0) {
            found.kind = CacheLookup::Kind::kFresh;
            return found;
        }
        found.kind = CacheLookup::Kind::kStale;
        if (settings_.verify_stale) {
            found.verify = true;
        } else {
            served_stale_.fetch_add(1, std::memory_order_relaxed);
            if (!entry.refreshing) {
                entry.refreshing = true;
                found.refresh = true;
                refreshes_.fetch_add(1, std::memory_order_relaxed);
            }
        }
        return found;
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    return found;
}

CachedAnswer Cache::store(const Question& question, Message reply, Clock::time_point now) {
    std::optional<Verdict> verdict = classify(question, reply);
    CachedAnswer answer = std::move(*upstream_answer(std::move(reply)));
    if (!verdict) return answer;
    uint32_t floor =
        verdict->kind == kSuccess ? settings_.success.min_ttl : settings_.denial.min_ttl;
    for (auto* section : {&answer.answers, &answer.authority, &answer.additional}) {
        for (auto& record : *section)
            record.ttl = std::min(std::max(record.ttl, floor), verdict->ttl);
    }
    Entry entry;
    entry.key = key_of(question);
    entry.answer = answer;
    entry.stored = now;
    entry.ttl = verdict->ttl;
    insert(verdict->kind, std::move(entry));
    return answer;
}

void Cache::insert(Kind kind, Entry entry) {
    entry.bytes = entry_bytes(entry);
    {
        // One answer per question: a newer one of the other store replaces it.
        Shard& other = shard_of(kind == kSuccess ? kDenial : kSuccess, entry.key);
        std::lock_guard lock(other.mutex);
        erase(other, entry.key);
    }
    Shard& shard = shard_of(kind, entry.key);
    std::lock_guard lock(shard.mutex);
    erase(shard, entry.key);
    if (entry.bytes > shard_bytes_[kind]) {
        too_large_[kind].fetch_add(1, std::memory_order_relaxed);
        return;
    }
    while (!shard.entries.empty() && (shard.entries.size() >= shard_capacity_[kind] ||
                                      shard.bytes + entry.bytes > shard_bytes_[kind])) {
        evict(kind, shard);
    }
    shard.bytes += entry.bytes;
    shard.entries.push_front(std::move(entry));
    shard.index[shard.entries.front().key] = shard.entries.begin();
}

void Cache::evict(Kind kind, Shard& shard) {
    auto victim = shard.index.find(shard.entries.back().key);
    if (settings_.eviction == CacheSettings::Eviction::kRandom) {
        // A random non-empty bucket's first entry (xorshift64).
        shard.random ^= shard.random << 13;
        shard.random ^= shard.random >> 7;
        shard.random ^= shard.random << 17;
        size_t buckets = shard.index.bucket_count();
        size_t bucket = shard.random % buckets;
        while (shard.index.bucket_size(bucket) == 0) bucket = (bucket + 1) % buckets;
        victim = shard.index.find(shard.index.begin(bucket)->first);
    }
    remove(shard, victim);
    evictions_[kind].fetch_add(1, std::memory_order_relaxed);
}

Result<CachedAnswer> Cache::complete(const Question& question, Result<Message> upstream,
                                     std::optional<CachedAnswer> stale, Clock::time_point now) {
    if (stale && !(upstream && replaces_stale(*upstream))) {
        served_stale_.fetch_add(1, std::memory_order_relaxed);
        return std::move(*stale);
    }
    if (!upstream) return upstream.error();
    return store(question, std::move(*upstream), now);
}

void Cache::refreshed(const Question& question, Result<Message> upstream, Clock::time_point now) {
    if (upstream && replaces_stale(*upstream)) store(question, std::move(*upstream), now);
    std::string key = key_of(question);
    for (Kind kind : {kDenial, kSuccess}) {
        Shard& shard = shard_of(kind, key);
        std::lock_guard lock(shard.mutex);
        if (Entry* entry = find(shard, key)) entry->refreshing = false;
    }
}

size_t Cache::size(Kind kind) const {
    size_t total = 0;
    for (const auto& shard : shards_[kind]) {
        std::lock_guard lock(shard->mutex);
        total += shard->entries.size();
    }
    return total;
}

size_t Cache::bytes(Kind kind) const {
    size_t total = 0;
    for (const auto& shard : shards_[kind]) {
        std::lock_guard lock(shard->mutex);
        total += shard->bytes;
    }
    return total;
}

void Cache::append_metrics(metrics::TextWriter& out, const std::string& server) const {
    using metrics::Type;
    const std::string& zones = settings_.zones_label;
    const std::string view;
    static constexpr const char* kTypes[kKinds] = {"success", "denial"};
    auto by_type = [&](metrics::Family family, auto value) {
        out.family(family);
        for (size_t k = 0; k < kKinds; ++k) {
            out.sample({server, kTypes[k], zones, view}, value(static_cast<Kind>(k)));
        }
    };
    auto plain = [&](metrics::Family family, uint64_t value) {
        out.family(family);
        out.sample({server, zones, view}, value);
    };
    const std::vector<std::string> typed = {"server", "type", "zones", "view"};
    const std::vector<std::string> untyped = {"server", "zones", "view"};
    by_type({"coredns_cache_entries", "The number of elements in the cache.", Type::kGauge, typed},
            [this](Kind k) { return static_cast<uint64_t>(size(k)); });
    by_type({"coredns_cache_hits_total", "The count of cache hits.", Type::kCounter, typed},
            [this](Kind k) { return hits(k); });
    plain({"coredns_cache_misses_total",
           "The count of cache misses. Deprecated, derive misses from cache hits/requests "
           "counters.",
           Type::kCounter, untyped},
          misses());
    plain({"coredns_cache_requests_total", "The count of cache requests.", Type::kCounter, untyped},
          requests());
    plain({"coredns_cache_prefetch_total",
           "The number of times the cache has prefetched a cached item.", Type::kCounter, untyped},
          refreshes());
    plain({"coredns_cache_served_stale_total",
           "The number of requests served from stale cache entries.", Type::kCounter, untyped},
          served_stale());
    by_type(
        {"coredns_cache_evictions_total", "The count of cache evictions.", Type::kCounter, typed},
        [this](Kind k) { return evictions(k); });
    by_type({"switchboard_dns_cache_bytes",
             "The bytes the cache's entries take: keys, records and per-entry overhead.",
             Type::kGauge, typed},
            [this](Kind k) { return static_cast<uint64_t>(bytes(k)); });
    by_type({"switchboard_dns_cache_too_large_total",
             "Replies not cached because their entry alone exceeds a shard's byte share.",
             Type::kCounter, typed},
            [this](Kind k) { return too_large(k); });
}

}  // namespace sb::dns
