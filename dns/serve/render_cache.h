// RenderCache: the rendered zone replies of one serving thread, keyed by the
// quick-parse key (dns/wire/quick_query.h) plus the EDNS state and size limit.
// Open addressing over (hash, entry) slots, each entry one block holding its
// key and reply: a hit costs about two cache misses (a node-based map with
// heap keys costs four).
//
// Bounded in entries and in bytes (issue 10): the bytes are every entry's
// block with the allocator's overhead, its pointer, and the slot table. An
// insert that would pass either bound first empties the cache (a flush,
// counted), as a new zone does: the replies in use come back at their next
// query, and a burst of one-off names cannot keep them out for good.
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

#include "dns/wire/wire.h"

namespace sb::dns {

struct RenderCacheLimits {
    size_t entries = 50000;
    // Per serving thread: ~10 000 ordinary replies (key and reply
    // ~200-400 bytes with overhead), a node's working set many times over.
    size_t bytes = 4 << 20;
};

class RenderCache {
  public:
    using Limits = RenderCacheLimits;

    struct Entry {
        uint16_t key_size = 0;
        uint16_t reply_size = 0;
        uint16_t shuffle_offset = 0;
        uint16_t shuffle_size = 0;
        uint16_t shuffle_count = 0;
        const char* key() const { return reinterpret_cast<const char*>(this + 1); }
        const char* reply() const { return key() + key_size; }
    };

    explicit RenderCache(Limits limits = {}) : limits_(limits) {}

    static uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }

    // The entry of `key` (whose hash() is `h`), or null.
    const Entry* find(std::string_view key, uint64_t h) const;
    // Keeps `written` for `key` (a reply over 64 KiB, or one bigger than the
    // byte bound alone, is not kept). `key` must not be present.
    void insert(std::string_view key, uint64_t h, const WriteResult& written);
    void clear();

    // `entry`'s reply as the answer to `query`, whose question name ends at
    // `name_end` (quick_parse's) and equals the entry's but for case: the
    // query's ID, RD and CD bits and its question's bytes (so the answer
    // owners, which point at the question, carry the asker's case).
    static void reply_to(const Entry& entry, std::span<const uint8_t> query, size_t name_end,
                         std::string& out);

    size_t size() const { return size_; }
    size_t bytes() const;  // what the bound counts: entries and slot table
    uint64_t flushes() const { return flushes_; }

  private:
    struct Slot {
        uint64_t hash = 0;
        const Entry* entry = nullptr;
    };

    static size_t entry_bytes(size_t key_size, size_t reply_size);
    void place(Slot slot);
    void grow();
    size_t slots_after_insert() const;

    Limits limits_;
    std::vector<Slot> slots_;
    std::vector<std::unique_ptr<char[]>> blocks_;
    size_t size_ = 0;
    size_t entry_bytes_ = 0;  // entry_bytes() summed over the entries
    uint64_t flushes_ = 0;
};

}  // namespace sb::dns
