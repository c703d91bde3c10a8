// Publish after programming (docs/dns.md): under
// ZoneConfig::publish_after_programming a Service the proxy programs has
// its ClusterIP names only for what the kernel serves of it, other names
// keep today's timing, and the zone is held back until the first report.
#include <algorithm>
#include <catch.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"
#include "watch/store.h"

namespace sb::dns {
namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}

watch::Service cluster_ip(const std::string& name, std::vector<IpAddress> ips) {
    watch::Service s;
    s.meta.ns = "a";
    s.meta.name = name;
    s.cluster_ips = std::move(ips);
    s.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    s.ports.push_back(watch::ServicePort{"dns", watch::Protocol::kUDP, 53, {}, 0});
    return s;
}

watch::EndpointSlice slice(const std::string& service, const char* address) {
    watch::EndpointSlice s;
    s.meta.ns = "a";
    s.meta.name = service + "-1";
    s.service_name = service;
    s.address_type = watch::AddressType::kIPv4;
    watch::Endpoint e;
    e.addresses.push_back(ip(address));
    e.ready = true;
    s.endpoints.push_back(e);
    s.ports.push_back(watch::EndpointPort{"http", watch::Protocol::kTCP, 8080});
    return s;
}

ProgrammedServicePtr programmed(std::vector<IpAddress> ips, std::vector<ProgrammedPort> ports) {
    auto p = std::make_shared<ProgrammedService>();
    p->cluster_ips = std::move(ips);
    std::sort(p->cluster_ips.begin(), p->cluster_ips.end());
    p->ports = std::move(ports);
    std::sort(p->ports.begin(), p->ports.end());
    return p;
}

const ProgrammedPort kHttp{"http", watch::Protocol::kTCP, 80};
const ProgrammedPort kDns{"dns", watch::Protocol::kUDP, 53};

ZoneConfig gated_config() {
    ZoneConfig config;
    config.publish_after_programming = true;
    config.local_dns_addresses = {ip("10.96.0.10")};
    return config;
}

bool has(const Zone& zone, const std::string& text, uint16_t rtype) {
    const Zone::NodeRef node = zone.find(*name_from_text(text));
    return node && node->find(rtype) != nullptr;
}

// Every (name, type, rdata) of the zone, sorted: two zones are the same
// zone when these are equal.
std::vector<std::tuple<std::string, uint16_t, std::string>> records(const Zone& zone) {
    std::vector<std::tuple<std::string, uint16_t, std::string>> out;
    zone.for_each_name([&](const std::string& name, const Zone::Node& node) {
        if (node.rrsets.empty()) out.emplace_back(name, 0, "");
        for (const auto& rrset : node.rrsets) {
            for (const auto& rdata : rrset.rdatas) out.emplace_back(name, rrset.rtype, rdata);
        }
    });
    std::sort(out.begin(), out.end());
    return out;
}

watch::SnapshotBuilder cluster() {
    watch::SnapshotBuilder b;
    b.synced(true);
    b.add(cluster_ip("web", {ip("10.96.1.1"), ip("fd00::1")}));
    b.add(slice("web", "10.244.0.5"));
    watch::Service headless;
    headless.meta.ns = "a";
    headless.meta.name = "db";
    headless.headless = true;
    b.add(headless);
    b.add(slice("db", "10.244.0.6"));
    watch::Service ext;
    ext.meta.ns = "a";
    ext.meta.name = "ext";
    ext.type = watch::ServiceType::kExternalName;
    ext.external_name = "example.com";
    b.add(ext);
    auto other = cluster_ip("other", {ip("10.96.1.2")});  // another proxy's
    other.meta.labels[watch::kServiceProxyNameLabel] = "cilium";
    b.add(other);
    b.add(cluster_ip("kube-dns", {ip("10.96.0.10")}));  // answered on the node itself
    return b;
}

}  // namespace

TEST_CASE("zone programmed: the zone is held back whole until the proxy's first report") {
    ProgrammedServices none;
    auto held = *Zone::build(*cluster().build(), gated_config(), &none);
    CHECK_FALSE(held->synced());
    CHECK_FALSE(has(*held, "db.a.svc.cluster.local", type::kA));
    auto unreported = *Zone::build(*cluster().build(), gated_config(), nullptr);
    CHECK_FALSE(unreported->synced());
    // Without the option the same snapshot is published at once.
    auto plain = *Zone::build(*cluster().build(), ZoneConfig{}, &none);
    CHECK(plain->synced());
    CHECK(has(*plain, "web.a.svc.cluster.local", type::kA));
}

TEST_CASE("zone programmed: a programmed Service's names wait for its rules, the rest do not") {
    ProgrammedServices state;
    state.apply({});  // the first sync failed: nothing programmed
    auto zone = *Zone::build(*cluster().build(), gated_config(), &state);
    REQUIRE(zone->synced());
    CHECK_FALSE(has(*zone, "web.a.svc.cluster.local", type::kA));
    CHECK_FALSE(has(*zone, "web.a.svc.cluster.local", type::kAAAA));
    CHECK(zone->find(reverse_name(ip("10.96.1.1"))) == nullptr);
    CHECK(zone->find(reverse_name(ip("10.244.0.5"))) == nullptr);
    CHECK_FALSE(has(*zone, "_http._tcp.web.a.svc.cluster.local", type::kSRV));
    // No rules to wait for: headless, ExternalName, another proxy's, and a
    // ClusterIP the node answers DNS on itself.
    CHECK(has(*zone, "db.a.svc.cluster.local", type::kA));
    CHECK(has(*zone, "ext.a.svc.cluster.local", type::kCNAME));
    CHECK(has(*zone, "other.a.svc.cluster.local", type::kA));
    CHECK(has(*zone, "kube-dns.a.svc.cluster.local", type::kA));

    state.apply({{{"a", "web"}, programmed({ip("10.96.1.1"), ip("fd00::1")}, {kHttp, kDns})}});
    zone = *Zone::build(*cluster().build(), gated_config(), &state);
    CHECK(has(*zone, "web.a.svc.cluster.local", type::kA));
    CHECK(has(*zone, "web.a.svc.cluster.local", type::kAAAA));
    CHECK(zone->find(reverse_name(ip("10.96.1.1"))) != nullptr);
    CHECK(zone->find(reverse_name(ip("10.244.0.5"))) != nullptr);
    CHECK(has(*zone, "_http._tcp.web.a.svc.cluster.local", type::kSRV));
    CHECK(has(*zone, "_dns._udp.web.a.svc.cluster.local", type::kSRV));
}

TEST_CASE("zone programmed: only the addresses and ports the kernel serves are published") {
    ProgrammedServices state;
    state.apply({{{"a", "web"}, programmed({ip("10.96.1.1")}, {kHttp})}});
    auto zone = *Zone::build(*cluster().build(), gated_config(), &state);
    CHECK(has(*zone, "web.a.svc.cluster.local", type::kA));
    CHECK_FALSE(has(*zone, "web.a.svc.cluster.local", type::kAAAA));
    CHECK(zone->find(reverse_name(ip("fd00::1"))) == nullptr);
    CHECK(has(*zone, "_http._tcp.web.a.svc.cluster.local", type::kSRV));
    CHECK_FALSE(has(*zone, "_dns._udp.web.a.svc.cluster.local", type::kSRV));
}

TEST_CASE("zone programmed: updates give the zone a build gives, reports and changes mixed") {
    watch::Store store;
    store.set_synced(true);
    std::vector<watch::Change> pending;
    store.subscribe([&pending](const std::vector<watch::Change>& changes) {
        pending.insert(pending.end(), changes.begin(), changes.end());
    });
    ProgrammedServices state;
    auto zone = *Zone::build(*store.snapshot(), gated_config(), &state);
    auto report = [&](const ProgrammedChanges& changes) {
        for (auto& key : state.apply(changes)) {
            pending.push_back(watch::Change{watch::Kind::kService, key, key});
        }
    };
    auto step = [&] {
        zone = zone->update(*store.snapshot(), std::exchange(pending, {}), &state);
        auto built = *Zone::build(*store.snapshot(), gated_config(), &state);
        REQUIRE(zone->synced() == built->synced());
        REQUIRE(records(*zone) == records(*built));
    };
    store.upsert(cluster_ip("web", {ip("10.96.1.1"), ip("fd00::1")}));
    store.upsert(slice("web", "10.244.0.5"));
    step();  // unreported: held back
    CHECK_FALSE(zone->synced());
    report({});
    step();
    CHECK(zone->synced());
    CHECK_FALSE(has(*zone, "web.a.svc.cluster.local", type::kA));
    report({{{"a", "web"}, programmed({ip("10.96.1.1")}, {kHttp})}});
    step();
    CHECK(has(*zone, "web.a.svc.cluster.local", type::kA));
    CHECK_FALSE(has(*zone, "web.a.svc.cluster.local", type::kAAAA));
    report({{{"a", "web"}, programmed({ip("10.96.1.1"), ip("fd00::1")}, {kHttp, kDns})}});
    store.upsert(cluster_ip("api", {ip("10.96.1.3")}));
    step();
    CHECK(has(*zone, "web.a.svc.cluster.local", type::kAAAA));
    CHECK(has(*zone, "_dns._udp.web.a.svc.cluster.local", type::kSRV));
    CHECK_FALSE(has(*zone, "api.a.svc.cluster.local", type::kA));
    // The port goes from the Service: its SRV goes even though the report
    // still names it (what is published is what both say).
    auto web = cluster_ip("web", {ip("10.96.1.1"), ip("fd00::1")});
    web.ports.pop_back();
    store.upsert(web);
    step();
    CHECK_FALSE(has(*zone, "_dns._udp.web.a.svc.cluster.local", type::kSRV));
    // Withdrawn: every name of the Service goes, its endpoints' PTRs too.
    report({{{"a", "web"}, nullptr}});
    step();
    CHECK_FALSE(has(*zone, "web.a.svc.cluster.local", type::kA));
    CHECK(zone->find(reverse_name(ip("10.244.0.5"))) == nullptr);
    store.remove(watch::Kind::kService, {"a", "web"});
    step();
}

}  // namespace sb::dns
