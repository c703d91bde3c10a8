// RenderCache: rendered zone replies of one serving thread, keyed by the
// quick-parse key (dns/quick_query.h) plus the EDNS state and size limit.
// Open addressing over (hash, entry) slots, and each entry one block
// holding its key and reply: a hit costs about two cache misses (a
// node-based map with heap keys costs four). At most kRenderCacheLimit
// entries; cleared whole when the zone, hosts table or engine changes.
//
// Thread safety: none; one serving thread owns each cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dns/wire.h"

namespace sb::dns {

inline constexpr size_t kRenderCacheLimit = 50000;

class RenderCache {
  public:
    struct Entry {
        uint16_t key_size = 0;
        uint16_t reply_size = 0;
        uint16_t shuffle_offset = 0;
        uint16_t shuffle_size = 0;
        uint16_t shuffle_count = 0;
        const char* key() const { return reinterpret_cast<const char*>(this + 1); }
        const char* reply() const { return key() + key_size; }
    };

    static uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

    const Entry* find(std::string_view key, uint64_t h) const;
    // Keeps `written` under `key` (no-op when full or over 65535 bytes).
    void insert(std::string_view key, uint64_t h, const WriteResult& written);
    void clear();
    size_t size() const { return size_; }

    // `entry`'s reply as the answer to `query`, whose question name ends at
    // `name_end` (quick_parse's) and equals the entry's but for case: the
    // query's ID, RD and CD bits and its question's bytes (so the answer
    // owners, which point at the question, carry the asker's case).
    static void reply_to(const Entry& entry, std::span<const uint8_t> query, size_t name_end,
                         std::string& out);

  private:
    struct Slot {
        uint64_t hash = 0;
        const Entry* entry = nullptr;
    };

    void place(Slot slot);
    void grow();

    std::vector<Slot> slots_;
    std::vector<std::unique_ptr<char[]>> blocks_;
    size_t size_ = 0;
};

}  // namespace sb::dns
