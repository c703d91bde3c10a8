// Cache: upstream answers for names outside the cluster zone, positive and
// negative (RFC 2308), TTL capped, size-bounded LRU.
//
// Thread safety: every method may be called from any thread (one mutex; the
// critical sections copy a few records).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dns/wire.h"

namespace sb::dns {

struct CachedAnswer {
    uint8_t rcode = 0;
    std::vector<Record> answers;
    std::vector<Record> authority;
    std::vector<Record> additional;
};

class Cache {
  public:
    using Clock = std::chrono::steady_clock;
    static constexpr uint32_t kMaxTtl = 30;      // seconds, positive and negative
    static constexpr uint32_t kNegativeTtl = 5;  // negative answer without a SOA
    static constexpr size_t kDefaultCapacity = 10000;

    explicit Cache(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

    // The cached answer with TTLs aged to `now`; nullopt on a miss or an
    // expired entry. Counts a hit or a miss.
    std::optional<CachedAnswer> lookup(const Question& question, Clock::time_point now);

    // Stores an upstream reply for `question` when it is cacheable (NOERROR
    // or NXDOMAIN, not truncated). TTL: the smallest record TTL (SOA minimum
    // for negative answers), capped at kMaxTtl.
    void insert(const Question& question, const Message& reply, Clock::time_point now);

    uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
    uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
    size_t size() const;

  private:
    struct Entry {
        std::string key;
        CachedAnswer answer;
        Clock::time_point stored;
        Clock::time_point expires;
    };
    static std::string key_of(const Question& question);

    const size_t capacity_;
    mutable std::mutex mutex_;
    std::list<Entry> lru_;  // most recent first
    std::unordered_map<std::string, std::list<Entry>::iterator> index_;
    std::atomic<uint64_t> hits_{0};
    std::atomic<uint64_t> misses_{0};
    std::atomic<uint64_t> evictions_{0};
};

}  // namespace sb::dns
