// The serving threads' counters (dns/serve/server_stats.h): the `type` label
// mapping both ways and the histograms' buckets.
#include <catch.hpp>

#include "dns/serve/server_stats.h"
#include "dns/wire/wire.h"

using namespace sb::dns;

TEST_CASE("server stats: type_at inverts type_index; other types share the last index") {
    for (uint16_t qtype : {type::kA, type::kAAAA, type::kSRV, type::kPTR, type::kTXT, type::kSOA,
                           type::kNS, type::kCNAME, type::kANY, type::kMX}) {
        size_t index = ServerStats::type_index(qtype);
        REQUIRE(index < ServerStats::kTypes - 1);
        CHECK(ServerStats::type_at(index) == qtype);
    }
    CHECK(ServerStats::type_index(type::kOPT) == ServerStats::kTypes - 1);
    CHECK(ServerStats::type_index(65280) == ServerStats::kTypes - 1);
    CHECK(ServerStats::type_at(ServerStats::kTypes - 1) == 0);
}

TEST_CASE("server stats: histograms count into the first bucket at or above the value") {
    ServerStats stats;
    stats.duration.record(0.0005, 3, false);  // on a bound: that bucket
    stats.duration.record(0.003, 1, true);    // between 0.002 and 0.004
    stats.duration.record(100, 2, false);     // past the last bound: +Inf
    stats.duration.record(1, 0, false);       // no replies: nothing
    CHECK(stats.duration.buckets[1].load() == 3);
    CHECK(stats.duration.buckets[4].load() == 1);
    CHECK(stats.duration.buckets[ServerStats::kBuckets.size()].load() == 2);
    CHECK(stats.duration.sum.load() == Approx(3 * 0.0005 + 0.003 + 200));

    stats.request_size[0].record(0, false);
    stats.request_size[0].record(512, true);  // past 511
    stats.request_size[0].record(70000, false);
    CHECK(stats.request_size[0].buckets[0].load() == 1);
    CHECK(stats.request_size[0].buckets[6].load() == 1);
    CHECK(stats.request_size[0].buckets[ServerStats::kSizeBuckets.size()].load() == 1);
    CHECK(stats.request_size[0].sum.load() == 70512);
}
