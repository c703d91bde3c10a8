#include <catch.hpp>

#include "dns/corefile/options.h"
#include "dns/corefile/plugin_cache.h"
#include "dns/forward/cache_set.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::string lower_wire(const char* text) {
    return name_lower(*name_from_text(text));
}

// The caches a Corefile gives (apply_corefile, as the daemon calls it).
DnsOptions options_of(const char* corefile) {
    DnsOptions options;
    options.listen = {*parse_host_port("127.0.0.1:53", 53)};
    auto warnings = apply_corefile(corefile, "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    REQUIRE(options.caches.has_value());
    return options;
}

}  // namespace

TEST_CASE("a name goes through the cache of the block with its longest zone") {
    CacheSet set({
        CacheBlock{{lower_wire(".")}, CacheSettings::coredns_default(), {}},
        CacheBlock{{lower_wire("consul.local")}, std::nullopt, {}},
        CacheBlock{{lower_wire("example.org"), lower_wire("example.net")},
                   CacheSettings::coredns_default(),
                   {lower_wire("a.example.org")}},
    });
    Cache* root = set.for_name(lower_wire("www.example.com"));
    REQUIRE(root != nullptr);
    CHECK(set.for_name(lower_wire("example.com")) == root);
    // A block without cache caches nothing, even where "." has one.
    CHECK(set.for_name(lower_wire("web.service.consul.local")) == nullptr);
    // `cache ZONES`: only those names of the block.
    Cache* zoned = set.for_name(lower_wire("x.a.example.org"));
    REQUIRE(zoned != nullptr);
    CHECK(zoned != root);
    CHECK(set.for_name(lower_wire("b.example.org")) == nullptr);
    CHECK(set.for_name(lower_wire("www.example.net")) == nullptr);
}

TEST_CASE("the flags path: one cache for every name") {
    auto set = CacheSet::flags_default();
    Cache* cache = set->for_name(lower_wire("www.example.com"));
    REQUIRE(cache != nullptr);
    CHECK(set->for_name(lower_wire("consul.local")) == cache);
}

TEST_CASE("each server block's cache options become its cache's settings") {
    DnsOptions options = options_of(R"(.:53 {
    kubernetes cluster.local in-addr.arpa ip6.arpa
    forward . 127.0.0.2
    cache 30 {
        success 5000 60 10
        denial 2500
        serve_stale 2m verify
        disable success cluster.local
        disable denial
    }
}
consul.local:53 {
    forward . 127.0.0.3
}
example.org:53 {
    forward . 127.0.0.4
    cache example.org example.net {
        serve_stale
    }
}
other:5353 {
    forward . 127.0.0.5
    cache
}
)");
    const auto& blocks = *options.caches;
    REQUIRE(blocks.size() == 3);  // port 5353 is not served
    REQUIRE(blocks[0].cache);
    const CacheSettings& root = *blocks[0].cache;
    CHECK(blocks[0].zones == std::vector<std::string>{lower_wire(".")});
    CHECK(root.zones_label == ".");
    CHECK(root.success.capacity == 5000);
    CHECK(root.success.max_ttl == 60);  // success's TTL overrides `cache 30`
    CHECK(root.success.min_ttl == 10);
    CHECK(root.denial.capacity == 2500);
    CHECK(root.denial.max_ttl == 30);
    CHECK(root.denial.min_ttl == 5);
    REQUIRE(root.serve_stale);
    CHECK(*root.serve_stale == std::chrono::seconds(120));
    CHECK(root.verify_stale);
    CHECK(root.disable_success == std::vector<std::string>{lower_wire("cluster.local")});
    CHECK(root.disable_denial == std::vector<std::string>{lower_wire(".")});
    CHECK(root.shards == 256);
    CHECK(root.eviction == CacheSettings::Eviction::kRandom);

    CHECK_FALSE(blocks[1].cache);

    REQUIRE(blocks[2].cache);
    const CacheSettings& zoned = *blocks[2].cache;
    CHECK(zoned.zones_label == "example.org.,example.net.");
    CHECK(blocks[2].cache_zones ==
          std::vector<std::string>{lower_wire("example.org"), lower_wire("example.net")});
    CHECK(zoned.success.max_ttl == 3600);
    CHECK(zoned.denial.max_ttl == 1800);
    REQUIRE(zoned.serve_stale);
    CHECK(*zoned.serve_stale == std::chrono::hours(1));
    CHECK_FALSE(zoned.verify_stale);
    CHECK(zoned.disable_success.empty());
}
