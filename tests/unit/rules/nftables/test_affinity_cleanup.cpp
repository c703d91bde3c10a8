// Which affinity entries the cleanup deletes (rules/nftables/affinity_cleanup.h):
// an entry stays only when the rendered rules of its frontend would record
// its endpoint themselves. The backend's use of it over the fake kernel, in
// incremental and full syncs, is in test_backend.cpp.
#include <netinet/in.h>
#include <catch.hpp>

#include <cstdint>
#include <utility>
#include <vector>

#include "rules/nftables/affinity_cleanup.h"
#include "rules/nftables/render.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using namespace sb::rules::testing;

namespace {

// default/web:http (10.96.0.10:80, endpoints 10.244.1.7 local, 10.244.2.7,
// 10.244.3.7, all :8080) with ClientIP affinity.
ServicePortPlan sticky_web() {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity = {true, 10800};
    return p;
}

struct Entry {
    const char* frontend;
    uint16_t port;
    const char* endpoint;
    uint16_t endpoint_port = 8080;
    uint8_t proto = IPPROTO_TCP;
};

// Whether the cleanup keeps a client's entry for `e` under the rules of `ports`.
bool kept(const std::vector<ServicePortPlan>& ports, const Entry& e) {
    RenderResult r = render(plan_on_node_a(ports), options());
    REQUIRE(r.errors.empty());
    const IpAddress frontend = ip(e.frontend);
    const IpAddress client = frontend.is_v4() ? ip("10.244.5.5") : ip("fd00:244:5::5");
    ElementMap entries;
    entries.insert_or_assign(ElementKey{client, frontend, e.proto, e.port},
                             Verdict(VerdictKind::kNone, {}, ip(e.endpoint), e.endpoint_port));
    return stale_affinity_entries(r.model, frontend.family(), entries).empty();
}

}  // namespace

TEST_CASE("affinity cleanup: a ClusterIP entry stays only on an endpoint of its service port") {
    const std::vector<ServicePortPlan> ports{sticky_web()};
    for (const char* current : {"10.244.1.7", "10.244.2.7", "10.244.3.7"}) {
        INFO(current);
        CHECK(kept(ports, {"10.96.0.10", 80, current}));
    }
    CHECK_FALSE(kept(ports, {"10.96.0.10", 80, "10.244.4.7"}));        // removed or not ready
    CHECK_FALSE(kept(ports, {"10.96.0.10", 80, "10.244.1.7", 9090}));  // another port
    CHECK_FALSE(kept(ports, {"10.96.0.10", 81, "10.244.1.7"}));        // no such service port
    CHECK_FALSE(kept(ports, {"10.96.0.10", 80, "10.244.1.7", 8080, IPPROTO_UDP}));
    CHECK_FALSE(kept(ports, {"10.96.0.99", 80, "10.244.1.7"}));
}

TEST_CASE("affinity cleanup: no entry stays on a service port without affinity") {
    ServicePortPlan plain = sticky_web();
    plain.session_affinity = {};
    CHECK_FALSE(kept({plain}, {"10.96.0.10", 80, "10.244.1.7"}));
    CHECK_FALSE(kept({}, {"10.96.0.10", 80, "10.244.1.7"}));
}

TEST_CASE("affinity cleanup: a reused ClusterIP keeps no entry on the deleted service's pods") {
    ServicePortPlan reused = sticky_web();
    reused.service = "other";
    reused.cluster_endpoints = {endpoint("10.244.2.40", 8080, false)};
    reused.local_endpoints.clear();
    CHECK_FALSE(kept({reused}, {"10.96.0.10", 80, "10.244.1.7"}));
    CHECK(kept({reused}, {"10.96.0.10", 80, "10.244.2.40"}));
}

TEST_CASE("affinity cleanup: NodePort entries match by protocol and port, whatever node address") {
    ServicePortPlan p = sticky_web();
    p.node_port = 30080;
    const std::vector<ServicePortPlan> ports{p};
    for (const char* node_address : {"192.168.1.10", "10.0.2.15"}) {
        INFO(node_address);
        CHECK(kept(ports, {node_address, 30080, "10.244.3.7"}));
        CHECK_FALSE(kept(ports, {node_address, 30080, "10.244.4.7"}));
        CHECK_FALSE(kept(ports, {node_address, 30081, "10.244.3.7"}));
    }
    CHECK(kept(ports, {"10.96.0.10", 80, "10.244.3.7"}));
}

TEST_CASE("affinity cleanup: the endpoints are those the traffic policies route the frontend to") {
    ServicePortPlan p = sticky_web();
    p.external_ips = {ip("198.51.100.7")};
    p.node_port = 30080;

    SECTION("internalTrafficPolicy Local: ClusterIP entries on the local endpoints only") {
        p.internal_traffic_policy = TrafficPolicy::kLocal;
        CHECK(kept({p}, {"10.96.0.10", 80, "10.244.1.7"}));
        CHECK_FALSE(kept({p}, {"10.96.0.10", 80, "10.244.2.7"}));
        CHECK(kept({p}, {"198.51.100.7", 80, "10.244.2.7"}));
    }
    SECTION(
        "externalTrafficPolicy Local: the local endpoints, and the cluster ones of the "
        "short-circuited local clients") {
        p.external_traffic_policy = TrafficPolicy::kLocal;
        for (const auto& [frontend, port] : {std::pair{"198.51.100.7", uint16_t{80}},
                                             std::pair{"192.168.1.10", uint16_t{30080}}}) {
            INFO(frontend);
            CHECK(kept({p}, {frontend, port, "10.244.1.7"}));
            CHECK(kept({p}, {frontend, port, "10.244.2.7"}));
            CHECK_FALSE(kept({p}, {frontend, port, "10.244.4.7"}));
        }
    }
    SECTION("no endpoints: nothing stays") {
        p.cluster_endpoints.clear();
        p.local_endpoints.clear();
        CHECK_FALSE(kept({p}, {"10.96.0.10", 80, "10.244.1.7"}));
        CHECK_FALSE(kept({p}, {"198.51.100.7", 80, "10.244.1.7"}));
        CHECK_FALSE(kept({p}, {"192.168.1.10", 30080, "10.244.1.7"}));
    }
}

TEST_CASE("affinity cleanup: IPv6 entries are checked against the IPv6 rules") {
    const std::vector<ServicePortPlan> ports{dual_stack(sticky_web())};
    CHECK(kept(ports, {"fd00:96::10", 80, "fd00:244:2::7"}));
    CHECK_FALSE(kept(ports, {"fd00:96::10", 80, "fd00:244:3::7"}));
    CHECK(kept(ports, {"10.96.0.10", 80, "10.244.2.7"}));
}

TEST_CASE("affinity cleanup: only the stale keys of a dump are named, each once") {
    RenderResult r = render(plan_on_node_a({sticky_web()}), options());
    ElementMap entries;
    const auto pin = [&](const char* client, const char* endpoint_ip) {
        const ElementKey key{ip(client), ip("10.96.0.10"), IPPROTO_TCP, 80};
        entries.insert_or_assign(key, Verdict(VerdictKind::kNone, {}, ip(endpoint_ip), 8080));
        return key;
    };
    pin("10.244.5.5", "10.244.1.7");
    const ElementKey gone = pin("10.244.5.6", "10.244.9.9");
    pin("10.244.5.7", "10.244.3.7");
    CHECK(stale_affinity_entries(r.model, IpFamily::kV4, entries) == std::vector<ElementKey>{gone});
}

TEST_CASE(
    "affinity cleanup: only a change of a service port with affinity can make entries stale") {
    const ServicePortPlan sticky = sticky_web();
    ServicePortPlan plain = sticky;
    plain.session_affinity = {};
    CHECK_FALSE(affinity_changed({}));
    CHECK_FALSE(affinity_changed({{&plain, &plain}, {nullptr, &plain}, {&plain, nullptr}}));
    CHECK(affinity_changed({{&plain, &sticky}}));
    CHECK(affinity_changed({{&sticky, &plain}}));
    CHECK(affinity_changed({{&sticky, nullptr}}));
    CHECK(affinity_changed({{nullptr, &sticky}}));
}
