// The warm state's bytes (Zone::state_bytes, Zone::from_state_bytes): a
// zone comes back answering as it did (the random round trips are in
// test_zone_update.cpp), and bytes that are damaged, of another version,
// identity or configuration are refused with a line saying why.
#include <catch.hpp>
#include <string>

#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"

namespace sb::dns {
namespace {

std::shared_ptr<const Zone> one_service_zone(const ZoneConfig& config) {
    watch::Service web;
    web.meta.ns = "shop";
    web.meta.name = "web";
    web.cluster_ips = {*IpAddress::parse("10.96.7.7")};
    web.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    watch::SnapshotBuilder snapshot;
    snapshot.synced(true).generation(42).add(web);
    return *Zone::build(*snapshot.build(), config);
}

std::string refusal(const std::string& bytes, const ZoneConfig& config = ZoneConfig{},
                    const std::string& identity = "boot b netns 7") {
    auto zone = Zone::from_state_bytes(bytes, config, identity);
    REQUIRE_FALSE(zone.ok());
    return zone.error().message;
}

}  // namespace

TEST_CASE("zone state: a restored zone answers the names, serial and SOA it was written with") {
    auto zone = one_service_zone(ZoneConfig{});
    auto restored =
        Zone::from_state_bytes(zone->state_bytes("boot b netns 7"), ZoneConfig{}, "boot b netns 7");
    REQUIRE(restored.ok());
    const Zone& warm = **restored;
    CHECK(warm.synced());
    CHECK(warm.serial() == zone->serial());
    CHECK(warm.soa() == zone->soa());
    CHECK(warm.name_count() == zone->name_count());
    CHECK(warm.namespace_known("shop"));
    CHECK_FALSE(warm.namespace_known("other"));
    const Zone::NodeRef web = warm.find(*name_from_text("web.shop.svc.cluster.local"));
    REQUIRE(web);
    REQUIRE(web->find(type::kA));
    CHECK(web->find(type::kA)->rdatas.front() == rdata_address(*IpAddress::parse("10.96.7.7")));
    CHECK(warm.find(*name_from_text("7.7.96.10.in-addr.arpa")));
    CHECK(warm.find(*name_from_text("_http._tcp.web.shop.svc.cluster.local")));
}

TEST_CASE("zone state: damaged bytes are refused, each with its reason") {
    const std::string good = one_service_zone(ZoneConfig{})->state_bytes("boot b netns 7");
    CHECK(refusal("") == "not a zone state");
    CHECK(refusal("SBZONX" + good.substr(6)) == "not a zone state");
    CHECK(refusal(good.substr(0, good.size() - 1)) == "truncated");
    CHECK(refusal(good + "x") == "truncated");
    std::string flipped = good;
    flipped[good.size() / 2] = static_cast<char>(flipped[good.size() / 2] ^ 0x20);
    CHECK(refusal(flipped) == "checksum mismatch");
    std::string future = good;
    future[6] = 2;  // the format version's low byte
    CHECK(refusal(future) == "format version 2, this binary reads 1");
}

TEST_CASE("zone state: another boot, namespace or configuration is refused") {
    const std::string good = one_service_zone(ZoneConfig{})->state_bytes("boot b netns 7");
    CHECK(refusal(good, ZoneConfig{}, "boot b netns 8") ==
          "written in another boot or network namespace");
    ZoneConfig other_domain;
    other_domain.domain = "cluster.example";
    CHECK(refusal(good, other_domain) == "made with another cluster domain, ttl or record options");
    ZoneConfig other_ttl;
    other_ttl.ttl = 5;
    CHECK(refusal(good, other_ttl) == "made with another cluster domain, ttl or record options");
    ZoneConfig no_pods;
    no_pods.pods = PodRecords::kDisabled;
    CHECK(refusal(good, no_pods) == "made with another cluster domain, ttl or record options");
    // Whether names wait for rules is not the records' shape: the state
    // holds what was published, which is what the kernel served.
    ZoneConfig gated;
    gated.publish_after_programming = true;
    CHECK(Zone::from_state_bytes(good, gated, "boot b netns 7").ok());
}

}  // namespace sb::dns
