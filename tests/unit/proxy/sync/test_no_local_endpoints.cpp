// NoLocalEndpointCounts: kube-proxy's no-local-endpoints counts, kept from
// the ports that changed between plans, equal to a count from scratch.
#include <catch.hpp>

#include "proxy/sync/no_local_endpoints.h"
#include "rules/port_changes.h"

using namespace sb;
using namespace sb::proxy;

namespace {

rules::ServicePortPlan port(const std::string& name, std::vector<const char*> cluster_ips,
                            rules::TrafficPolicy internal, rules::TrafficPolicy external,
                            std::vector<const char*> local_ips = {}) {
    rules::ServicePortPlan p;
    p.ns = "ns";
    p.service = name;
    p.port_name = "http";
    for (const char* ip : cluster_ips) p.cluster_ips.push_back(*IpAddress::parse(ip));
    p.internal_traffic_policy = internal;
    p.external_traffic_policy = external;
    for (const char* ip : local_ips) {
        rules::Endpoint e;
        e.ip = *IpAddress::parse(ip);
        e.port = 8080;
        e.ready = e.serving = e.is_local = true;
        p.local_endpoints.push_back(e);
    }
    return p;
}

struct Counts {
    uint64_t internal4, external4, internal6, external6;
    bool operator==(const Counts&) const = default;
};

Counts counts_of(const NoLocalEndpointCounts& c) {
    return {c.internal(IpFamily::kV4), c.external(IpFamily::kV4), c.internal(IpFamily::kV6),
            c.external(IpFamily::kV6)};
}

Counts from_scratch(const rules::Plan& plan) {
    NoLocalEndpointCounts c;
    c.reset(plan);
    return counts_of(c);
}

constexpr auto kLocal = rules::TrafficPolicy::kLocal;
constexpr auto kCluster = rules::TrafficPolicy::kCluster;

}  // namespace

TEST_CASE("ports are counted per family of their ClusterIPs and per Local policy") {
    rules::Plan plan;
    plan.services = {
        port("a", {"10.0.0.1"}, kLocal, kCluster),                        // internal v4
        port("b", {"10.0.0.2", "fd00::2"}, kCluster, kLocal),             // external v4 and v6
        port("c", {"10.0.0.3", "fd00::3"}, kLocal, kLocal, {"fd00::9"}),  // v6 has one: v4 only
        port("d", {"10.0.0.4"}, kLocal, kLocal, {"10.1.0.4"}),            // has a local endpoint
        port("e", {"fd00::5"}, kCluster, kCluster),                       // no Local policy
    };
    CHECK(from_scratch(plan) == Counts{2, 2, 0, 1});
}

TEST_CASE("counts kept from the changed ports equal a count from scratch") {
    rules::Plan plan;
    plan.services = {port("a", {"10.0.0.1"}, kLocal, kCluster),
                     port("b", {"10.0.0.2", "fd00::2"}, kCluster, kLocal),
                     port("c", {"fd00::3"}, kLocal, kLocal)};
    NoLocalEndpointCounts kept;
    kept.reset(plan);

    auto step = [&](const char* what, auto&& change) {
        rules::Plan next = plan;
        change(next);
        auto changes = rules::changed_ports(plan, next);
        REQUIRE(changes);
        kept.apply(*changes);
        INFO(what);
        CHECK(counts_of(kept) == from_scratch(next));
        plan = std::move(next);
    };
    step("a port gets a local endpoint", [](rules::Plan& p) {
        p.services[0] = port("a", {"10.0.0.1"}, kLocal, kCluster, {"10.1.0.1"});
    });
    step("a port is removed", [](rules::Plan& p) { p.services.erase(p.services.begin() + 1); });
    step("a port is added", [](rules::Plan& p) {
        p.services.push_back(port("d", {"10.0.0.4", "fd00::4"}, kLocal, kLocal));
    });
    step("a policy goes back to Cluster",
         [](rules::Plan& p) { p.services[1] = port("c", {"fd00::3"}, kCluster, kLocal); });
    step("the local endpoint goes",
         [](rules::Plan& p) { p.services[0] = port("a", {"10.0.0.1"}, kLocal, kCluster); });
    CHECK(counts_of(kept) == Counts{2, 1, 1, 2});
}
