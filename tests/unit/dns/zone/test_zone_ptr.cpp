// Reverse names of endpoints: every ready endpoint address of a Service with
// EndpointSlices (ClusterIP or headless) has a PTR to its endpoint name,
// each rdata once, every Service sharing the address answering.
#include <algorithm>
#include <catch.hpp>
#include <string>
#include <vector>

#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"
#include "watch/store.h"

namespace sb::dns {
namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}
std::string wire(const std::string& text) {
    return *name_from_text(text);
}

watch::Service cluster_ip(const std::string& ns, const std::string& name,
                          std::vector<IpAddress> ips) {
    watch::Service s;
    s.meta.ns = ns;
    s.meta.name = name;
    s.cluster_ips = std::move(ips);
    s.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    return s;
}

watch::Endpoint endpoint(const char* address, const std::string& hostname, bool ready,
                         const std::string& pod = "") {
    watch::Endpoint e;
    e.addresses.push_back(ip(address));
    e.hostname = hostname;
    e.ready = ready;
    if (!pod.empty()) e.target_ref = watch::ObjectReference{"Pod", "", pod};
    return e;
}

watch::EndpointSlice slice(const std::string& ns, const std::string& name,
                           const std::string& service, std::vector<watch::Endpoint> endpoints,
                           watch::AddressType type = watch::AddressType::kIPv4) {
    watch::EndpointSlice s;
    s.meta.ns = ns;
    s.meta.name = name;
    s.service_name = service;
    s.address_type = type;
    s.endpoints = std::move(endpoints);
    s.ports.push_back(watch::EndpointPort{"http", watch::Protocol::kTCP, 8080});
    return s;
}

// The PTR targets of `address` in text, sorted; empty when the reverse name
// does not exist.
std::vector<std::string> ptrs(const Zone& zone, const char* address) {
    std::vector<std::string> out;
    const Zone::NodeRef node = zone.find(reverse_name(ip(address)));
    if (!node) return out;
    const Zone::RRset* rrset = node->find(type::kPTR);
    REQUIRE(rrset != nullptr);
    for (const auto& rdata : rrset->rdatas) out.push_back(name_to_text(rdata));
    std::sort(out.begin(), out.end());
    return out;
}

// A ClusterIP Service "web" in "a" with one slice of four endpoints:
// hostname, none, not ready, and a Pod targetRef without hostname; and an
// IPv6 slice.
watch::SnapshotBuilder web_cluster() {
    watch::SnapshotBuilder b;
    b.synced(true);
    b.add(cluster_ip("a", "web", {ip("10.96.0.10")}));
    b.add(slice("a", "web-1", "web",
                {endpoint("10.244.1.7", "", true), endpoint("10.244.1.8", "db-0", true),
                 endpoint("10.244.1.9", "", false), endpoint("10.244.1.10", "", true, "web-5d4")}));
    b.add(slice("a", "web-6", "web", {endpoint("fd00::7", "", true)}, watch::AddressType::kIPv6));
    return b;
}

TEST_CASE("zone ptr: every ready endpoint of a ClusterIP Service has a reverse name") {
    auto zone = *Zone::build(*web_cluster().build(), ZoneConfig{});
    CHECK(ptrs(*zone, "10.244.1.7") ==
          std::vector<std::string>{"10-244-1-7.web.a.svc.cluster.local."});
    CHECK(ptrs(*zone, "10.244.1.8") == std::vector<std::string>{"db-0.web.a.svc.cluster.local."});
    CHECK(ptrs(*zone, "10.244.1.10") ==
          std::vector<std::string>{"10-244-1-10.web.a.svc.cluster.local."});
    CHECK(ptrs(*zone, "fd00::7") == std::vector<std::string>{"fd00--7.web.a.svc.cluster.local."});
    CHECK(ptrs(*zone, "10.244.1.9").empty());  // not ready
    // The ClusterIP keeps its own reverse name; the endpoint names of a
    // ClusterIP Service get no forward records (the spec's headless only).
    CHECK(ptrs(*zone, "10.96.0.10") == std::vector<std::string>{"web.a.svc.cluster.local."});
    CHECK(zone->find(wire("10-244-1-7.web.a.svc.cluster.local")) == nullptr);
    CHECK(zone->find(wire("db-0.web.a.svc.cluster.local")) == nullptr);
}

TEST_CASE("zone ptr: reverse names are listed and found by their wire names only") {
    auto zone = *Zone::build(*web_cluster().build(), ZoneConfig{});
    std::vector<std::string> reverse;
    zone->for_each_name([&](const std::string& name, const Zone::Node&) {
        if (name.ends_with(std::string_view("\4arpa\0", 6))) reverse.push_back(name_to_text(name));
    });
    std::sort(reverse.begin(), reverse.end());
    CHECK(reverse == std::vector<std::string>{
                         "10.0.96.10.in-addr.arpa.", "10.1.244.10.in-addr.arpa.",
                         "7.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f."
                         "ip6.arpa.",
                         "7.1.244.10.in-addr.arpa.", "8.1.244.10.in-addr.arpa."});
    CHECK(zone->find(wire("7.1.244.10.in-addr.arpa")) != nullptr);
    // Other spellings of the same address are other names, none of ours.
    CHECK(zone->find(wire("7.1.244.010.in-addr.arpa")) == nullptr);
    CHECK(zone->find(wire("7.01.244.10.in-addr.arpa")) == nullptr);
    CHECK(zone->find(wire("1.244.10.in-addr.arpa")) == nullptr);
    CHECK(zone->find(wire("x.7.1.244.10.in-addr.arpa")) == nullptr);
    CHECK(zone->find(reverse_name(ip("fd00::7"))) != nullptr);
    CHECK(zone->find(reverse_name(ip("fd00::7")).substr(2)) == nullptr);
}

TEST_CASE("zone ptr: endpoint_pod_names names a ClusterIP endpoint after its Pod") {
    ZoneConfig config;
    config.endpoint_pod_names = true;
    auto zone = *Zone::build(*web_cluster().build(), config);
    CHECK(ptrs(*zone, "10.244.1.10") ==
          std::vector<std::string>{"web-5d4.web.a.svc.cluster.local."});
    CHECK(ptrs(*zone, "10.244.1.8") == std::vector<std::string>{"db-0.web.a.svc.cluster.local."});
    CHECK(ptrs(*zone, "10.244.1.7") ==
          std::vector<std::string>{"10-244-1-7.web.a.svc.cluster.local."});
}

TEST_CASE("zone ptr: noendpoints gives no reverse name from EndpointSlices") {
    ZoneConfig config;
    config.endpoints = false;
    auto zone = *Zone::build(*web_cluster().build(), config);
    CHECK(ptrs(*zone, "10.244.1.7").empty());
    CHECK(ptrs(*zone, "fd00::7").empty());
    CHECK(ptrs(*zone, "10.96.0.10") == std::vector<std::string>{"web.a.svc.cluster.local."});
}

TEST_CASE("zone ptr: no reverse names from the slices of ExternalName or unallocated Services") {
    watch::SnapshotBuilder b;
    b.synced(true);
    watch::Service ext;
    ext.meta.ns = "a";
    ext.meta.name = "ext";
    ext.type = watch::ServiceType::kExternalName;
    ext.external_name = "example.com";
    b.add(ext);
    b.add(slice("a", "ext-1", "ext", {endpoint("10.244.2.1", "", true)}));
    b.add(cluster_ip("a", "pending", {}));  // no ClusterIP allocated yet: no names
    b.add(slice("a", "pending-1", "pending", {endpoint("10.244.2.2", "", true)}));
    auto zone = *Zone::build(*b.build(), ZoneConfig{});
    CHECK(ptrs(*zone, "10.244.2.1").empty());
    CHECK(ptrs(*zone, "10.244.2.2").empty());
}

TEST_CASE("zone ptr: one rdata per name; an address two Services share answers for both") {
    auto b = web_cluster();
    // The same address again in another slice of web, and behind a second
    // ClusterIP Service and a headless one.
    b.add(slice("a", "web-2", "web", {endpoint("10.244.1.7", "", true)}));
    b.add(cluster_ip("b", "api", {ip("10.96.0.11")}));
    b.add(slice("b", "api-1", "api", {endpoint("10.244.1.7", "", true)}));
    watch::Service db;
    db.meta.ns = "a";
    db.meta.name = "db";
    db.headless = true;
    b.add(db);
    b.add(slice("a", "db-1", "db", {endpoint("10.244.1.7", "db-0", true)}));
    auto zone = *Zone::build(*b.build(), ZoneConfig{});
    CHECK(ptrs(*zone, "10.244.1.7") ==
          std::vector<std::string>{"10-244-1-7.api.b.svc.cluster.local.",
                                   "10-244-1-7.web.a.svc.cluster.local.",
                                   "db-0.db.a.svc.cluster.local."});
}

TEST_CASE("zone ptr: updates add and take out endpoint reverse names as a build does") {
    watch::Store store;
    store.set_synced(true);
    std::vector<watch::Change> pending;
    store.subscribe([&pending](const std::vector<watch::Change>& changes) {
        pending.insert(pending.end(), changes.begin(), changes.end());
    });
    store.upsert(cluster_ip("a", "web", {ip("10.96.0.10")}));
    store.upsert(cluster_ip("b", "api", {ip("10.96.0.11")}));
    store.upsert(slice("a", "web-1", "web", {endpoint("10.244.1.7", "", true)}));
    store.upsert(slice("b", "api-1", "api", {endpoint("10.244.1.7", "", true)}));
    auto zone = *Zone::build(*store.snapshot(), ZoneConfig{});
    pending.clear();
    auto step = [&] {
        zone = zone->update(*store.snapshot(), std::exchange(pending, {}));
        REQUIRE(zone->name_count() ==
                (*Zone::build(*store.snapshot(), ZoneConfig{}))->name_count());
    };

    // The endpoint goes not ready in web: api still answers for it.
    store.upsert(slice("a", "web-1", "web", {endpoint("10.244.1.7", "", false)}));
    step();
    CHECK(ptrs(*zone, "10.244.1.7") ==
          std::vector<std::string>{"10-244-1-7.api.b.svc.cluster.local."});
    // Ready again, with a hostname.
    store.upsert(slice("a", "web-1", "web", {endpoint("10.244.1.7", "w", true)}));
    step();
    CHECK(ptrs(*zone, "10.244.1.7") ==
          std::vector<std::string>{"10-244-1-7.api.b.svc.cluster.local.",
                                   "w.web.a.svc.cluster.local."});
    // api goes (its slice stays, as in the Store): only web's name is left.
    store.remove(watch::Kind::kService, {"b", "api"});
    step();
    CHECK(ptrs(*zone, "10.244.1.7") == std::vector<std::string>{"w.web.a.svc.cluster.local."});
    // web's slice goes: the reverse name goes with it.
    store.remove(watch::Kind::kEndpointSlice, {"a", "web-1"});
    step();
    CHECK(ptrs(*zone, "10.244.1.7").empty());
}

}  // namespace
}  // namespace sb::dns
