// The forward cache's byte bound (issue 10): what an entry is charged, and
// that a store never holds more than its bytes whatever its answers weigh.
#include <catch.hpp>

#include "dns/forward/cache.h"
#include "tests/unit/dns/heap_in_use.h"

using namespace sb;
using namespace sb::dns;

namespace {

using Kind = CacheLookup::Kind;
const Cache::Clock::time_point t0{};

std::string wire(const std::string& text) {
    return *name_from_text(text);
}

Question txt_question(const std::string& name) {
    return Question{wire(name), type::kTXT, kClassIN};
}

// What a hostile upstream can make of one packet: `count` TXT records at
// the question's name (a 2-byte compression pointer each on the wire,
// the whole name once parsed).
Message heavy_reply(const std::string& name, size_t count) {
    Message m;
    m.header.qr = true;
    for (size_t i = 0; i < count; ++i) {
        m.answers.push_back({wire(name), type::kTXT, kClassIN, 60, std::string(1, '\0')});
    }
    return m;
}

// A name of about 200 bytes, distinct per `i`.
std::string long_name(size_t i) {
    std::string label(60, 'x');
    return "n" + std::to_string(i) + "." + label + "." + label + "." + label + ".example";
}

Message typical_reply(const std::string& name) {
    Message m;
    m.header.qr = true;
    for (uint32_t i = 0; i < 3; ++i) {
        m.answers.push_back(
            {wire(name), type::kA, kClassIN, 60, rdata_address(IpAddress::v4(0x0a000001 + i))});
    }
    return m;
}

}  // namespace

TEST_CASE("ordinary answers fill a default store by entries, never by bytes") {
    CacheSettings settings;
    settings.success.capacity = 2000;
    Cache cache(settings);
    for (int i = 0; i < 2000; ++i) {
        std::string name = "host" + std::to_string(i) + ".example.com";
        cache.store(Question{wire(name), type::kA, kClassIN}, typical_reply(name), t0);
    }
    CHECK(cache.size(Cache::kSuccess) == 2000);
    CHECK(cache.evictions(Cache::kSuccess) == 0);
    // A three-record answer is charged well under the per-entry budget.
    CHECK(cache.bytes(Cache::kSuccess) / 2000 < CacheSettings::kDefaultEntryBytes / 2);
}

TEST_CASE("the bytes charged are the heap the entries really take") {
    if (!test::heap_is_visible()) {
        WARN("mallinfo2() does not see this allocator (a sanitizer build): no heap comparison");
        return;
    }
    Cache cache;
    size_t before = test::heap_in_use();
    for (size_t i = 0; i < 100; ++i) {
        cache.store(txt_question(long_name(i)), heavy_reply(long_name(i), 50), t0);
    }
    size_t used = test::heap_in_use() - before;
    size_t charged = cache.bytes(Cache::kSuccess);
    CHECK(cache.size(Cache::kSuccess) == 100);
    CHECK(charged > used * 8 / 10);
    CHECK(charged < used * 3 / 2);
}

TEST_CASE("heavy answers: the store stays within its bytes, evicting the least recent") {
    CacheSettings settings;
    settings.success.max_bytes = 1 << 20;
    Cache cache(settings);
    size_t peak = 0;
    for (size_t i = 0; i < 200; ++i) {
        cache.store(txt_question(long_name(i)), heavy_reply(long_name(i), 300), t0);
        peak = std::max(peak, cache.bytes(Cache::kSuccess));
    }
    CHECK(peak <= size_t{1} << 20);
    size_t kept = cache.size(Cache::kSuccess);
    CHECK(kept > 5);  // an entry is ~100 KiB: a handful fit
    CHECK(kept < 20);
    CHECK(cache.evictions(Cache::kSuccess) == 200 - kept);
    CHECK(cache.lookup(txt_question(long_name(199)), t0).kind == Kind::kFresh);
    CHECK(cache.lookup(txt_question(long_name(0)), t0).kind == Kind::kMiss);
}

TEST_CASE("CoreDNS's shards: each holds its share of the bytes, the total holds") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.success.max_bytes = 8 << 20;  // 32 KiB per shard
    Cache cache(settings);
    for (size_t i = 0; i < 3000; ++i) {
        cache.store(txt_question(long_name(i)), heavy_reply(long_name(i), 40), t0);
    }
    CHECK(cache.bytes(Cache::kSuccess) <= size_t{8} << 20);
    CHECK(cache.size(Cache::kSuccess) > 256);  // most shards hold something
    CHECK(cache.too_large(Cache::kSuccess) == 0);
}

TEST_CASE("an entry larger than its shard's share is not kept, and counted") {
    CacheSettings settings;
    settings.success.max_bytes = 64 << 10;
    Cache cache(settings);
    Question q = txt_question(long_name(1));
    cache.store(q, heavy_reply(long_name(1), 10), t0);
    REQUIRE(cache.lookup(q, t0).kind == Kind::kFresh);
    // The newer, larger answer replaces the old one and is not kept either.
    CachedAnswer sent = cache.store(q, heavy_reply(long_name(1), 1000), t0);
    CHECK(sent.answers.size() == 1000);  // the client still gets it
    CHECK(cache.too_large(Cache::kSuccess) == 1);
    CHECK(cache.lookup(q, t0).kind == Kind::kMiss);
    CHECK(cache.bytes(Cache::kSuccess) == 0);
}

TEST_CASE("bytes are given back when entries expire or move to the other store") {
    Cache cache;
    Question q = txt_question(long_name(2));
    cache.store(q, heavy_reply(long_name(2), 20), t0);
    CHECK(cache.bytes(Cache::kSuccess) > 20 * 200);
    Message denial;
    denial.header.qr = true;
    denial.header.rcode = static_cast<uint8_t>(Rcode::kNXDomain);
    cache.store(q, denial, t0);  // a denial without SOA: 5 s in the denial store
    CHECK(cache.bytes(Cache::kSuccess) == 0);
    CHECK(cache.bytes(Cache::kDenial) > 0);
    CHECK(cache.lookup(q, t0 + std::chrono::seconds(6)).kind == Kind::kMiss);
    CHECK(cache.bytes(Cache::kDenial) == 0);
}

TEST_CASE("the byte gauge and the too-large counter are exported per type") {
    CacheSettings settings;
    settings.success.max_bytes = 64 << 10;
    Cache cache(settings);
    cache.store(txt_question(long_name(3)), heavy_reply(long_name(3), 1000), t0);
    cache.store(txt_question(long_name(4)), heavy_reply(long_name(4), 1), t0);
    metrics::TextWriter out;
    cache.append_metrics(out, "dns://:53");
    std::string text = out.text();
    const std::string success = "{server=\"dns://:53\",type=\"success\",zones=\".\",view=\"\"}";
    CHECK(text.find("switchboard_dns_cache_bytes" + success + " " +
                    std::to_string(cache.bytes(Cache::kSuccess)) + "\n") != std::string::npos);
    CHECK(text.find("switchboard_dns_cache_too_large_total" + success + " 1\n") !=
          std::string::npos);
}
