// The rendered-reply cache's bounds (issue 10): entries and bytes, a flush
// when an insert would pass either, the bytes matching the heap it holds.
#include <catch.hpp>

#include "dns/serve/render_cache.h"
#include "tests/unit/dns/heap_in_use.h"

using namespace sb::dns;

namespace {

WriteResult rendered(size_t size) {
    WriteResult written;
    written.bytes.assign(size, 'r');
    return written;
}

std::string key_of(size_t i) {
    return "key-" + std::to_string(i) + std::string(40, 'k');
}

void insert(RenderCache& cache, size_t i, size_t reply_size) {
    std::string key = key_of(i);
    cache.insert(key, RenderCache::hash(key), rendered(reply_size));
}

bool holds(const RenderCache& cache, size_t i) {
    std::string key = key_of(i);
    return cache.find(key, RenderCache::hash(key)) != nullptr;
}

}  // namespace

TEST_CASE("render cache: entries found by key, reply bytes kept") {
    RenderCache cache;
    WriteResult written = rendered(100);
    written.bytes[0] = 'x';
    written.shuffle_offset = 40;
    written.shuffle_size = 16;
    written.shuffle_count = 3;
    std::string key = key_of(1);
    cache.insert(key, RenderCache::hash(key), written);
    const RenderCache::Entry* entry = cache.find(key, RenderCache::hash(key));
    REQUIRE(entry);
    CHECK(std::string(entry->reply(), entry->reply_size) == written.bytes);
    CHECK(entry->shuffle_count == 3);
    CHECK_FALSE(holds(cache, 2));
}

TEST_CASE("render cache: the byte bound holds, a flush makes room") {
    RenderCache cache(RenderCache::Limits{.entries = 50000, .bytes = 1 << 20});
    size_t peak = 0;
    for (size_t i = 0; i < 5000; ++i) {
        insert(cache, i, 1200);
        peak = std::max(peak, cache.bytes());
    }
    CHECK(peak <= size_t{1} << 20);
    CHECK(cache.flushes() >= 5);  // ~1.3 KiB an entry: ~800 fit in 1 MiB
    CHECK(holds(cache, 4999));    // the newest is kept
    CHECK_FALSE(holds(cache, 0));
}

TEST_CASE("render cache: the entry bound holds too") {
    RenderCache cache(RenderCache::Limits{.entries = 100, .bytes = 64 << 20});
    for (size_t i = 0; i < 250; ++i) insert(cache, i, 50);
    CHECK(cache.size() == 50);  // flushed at 100 and 200
    CHECK(cache.flushes() == 2);
    CHECK(holds(cache, 249));
}

TEST_CASE("render cache: a reply larger than the whole bound is not kept") {
    RenderCache cache(RenderCache::Limits{.entries = 100, .bytes = 32 << 10});
    insert(cache, 1, 100);
    insert(cache, 2, 40000);
    CHECK(holds(cache, 1));
    CHECK_FALSE(holds(cache, 2));
    CHECK(cache.flushes() == 0);
}

TEST_CASE("render cache: the bytes counted are the heap it holds, given back by clear") {
    if (!test::heap_is_visible()) {
        WARN("mallinfo2() does not see this allocator (a sanitizer build): no heap comparison");
        return;
    }
    size_t before = test::heap_in_use();
    RenderCache cache;
    for (size_t i = 0; i < 2000; ++i) insert(cache, i, 300);
    size_t used = test::heap_in_use() - before;
    CHECK(cache.bytes() > used * 8 / 10);
    CHECK(cache.bytes() < used * 3 / 2);
    cache.clear();
    CHECK(cache.bytes() == 0);
    CHECK(test::heap_in_use() - before < used / 10);
}
