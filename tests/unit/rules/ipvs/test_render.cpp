// Render: which virtual servers a plan gives, with which real servers,
// scheduler and persistence, following the shared service policy.
#include <netinet/in.h>
#include <catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "rules/ipvs/render.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::ipvs;
using namespace sb::rules::testing;

namespace {

using Target = std::pair<IpAddress, uint16_t>;

const std::vector<IpAddress> kNodePortAddresses = {ip("192.168.1.10"), ip("192.168.2.10"),
                                                   ip("fd00:1::10"), ip("fd00:2::10")};

Rendered render_ports(std::vector<ServicePortPlan> ports,
                      const std::vector<IpAddress>& node_port_addresses = kNodePortAddresses,
                      const BackendOptions& o = options()) {
    return render(plan_on_node_a(std::move(ports)), o, node_port_addresses);
}

ServiceKey tcp(const char* address, uint16_t port) {
    return ServiceKey{ip(address), IPPROTO_TCP, port};
}

// The real servers of the virtual server `key`, which must exist.
std::vector<Target> targets(const Rendered& r, const ServiceKey& key) {
    INFO(key.address.to_string() << ":" << key.port << " " << protocol_name(key.protocol));
    const auto found = r.services.find(key);
    REQUIRE(found != r.services.end());
    std::vector<Target> out;
    for (const RealServer& rs : found->second.destinations) {
        REQUIRE(rs.weight == 1);
        out.emplace_back(rs.address, rs.port);
    }
    return out;
}

std::vector<ServiceKey> keys(const Rendered& r) {
    std::vector<ServiceKey> out;
    for (const auto& [key, _] : r.services) out.push_back(key);
    return out;
}

const std::vector<Target> kLocalTarget = {{ip("10.244.1.7"), 8080}};

}  // namespace

TEST_CASE("render: a ClusterIP service port is one virtual server with every endpoint",
          "[render]") {
    const Rendered r = render_ports({web(three_endpoints())});
    REQUIRE(keys(r) == std::vector{tcp("10.96.0.10", 80)});
    REQUIRE(targets(r, tcp("10.96.0.10", 80)) == kAllTargets);
    const VirtualServer& server = r.services.at(tcp("10.96.0.10", 80)).server;
    REQUIRE(server.scheduler == "rr");
    REQUIRE_FALSE(server.persistent);
    REQUIRE(r.link_addresses == std::vector{ip("10.96.0.10")});
    REQUIRE(r.invalid_ports == 0);
    REQUIRE(r.duplicate_servers == 0);
}

TEST_CASE("render: real servers are sorted and unique, UDP and SCTP keep their protocol",
          "[render]") {
    ServicePortPlan p = web({endpoint("10.244.3.7", 53, false), endpoint("10.244.1.7", 53, true),
                             endpoint("10.244.3.7", 53, false)});
    p.protocol = Protocol::kUDP;
    p.port = 53;
    ServicePortPlan sctp = web({endpoint("10.244.2.7", 3868, false)});
    sctp.port_name = "diameter";
    sctp.protocol = Protocol::kSCTP;
    sctp.port = 3868;
    const Rendered r = render_ports({p, sctp});
    REQUIRE(targets(r, ServiceKey{ip("10.96.0.10"), IPPROTO_UDP, 53}) ==
            std::vector<Target>{{ip("10.244.1.7"), 53}, {ip("10.244.3.7"), 53}});
    REQUIRE(targets(r, ServiceKey{ip("10.96.0.10"), IPPROTO_SCTP, 3868}) ==
            std::vector<Target>{{ip("10.244.2.7"), 3868}});
    REQUIRE(r.services.size() == 2);
}

TEST_CASE("render: external IPs and LB IPs get virtual servers and go on the link", "[render]") {
    ServicePortPlan p = web(three_endpoints());
    p.external_ips = {ip("198.51.100.7"), ip("2001:db8::7")};
    p.load_balancer_ips = {ip("203.0.113.9")};
    const Rendered r = render_ports({p});
    // The IPv6 external IP has no IPv6 ClusterIP: kube-proxy's IPv6 proxier
    // would not see this service at all.
    REQUIRE(keys(r) ==
            std::vector{tcp("10.96.0.10", 80), tcp("198.51.100.7", 80), tcp("203.0.113.9", 80)});
    REQUIRE(targets(r, tcp("198.51.100.7", 80)) == kAllTargets);
    REQUIRE(targets(r, tcp("203.0.113.9", 80)) == kAllTargets);
    REQUIRE(r.link_addresses ==
            std::vector{ip("10.96.0.10"), ip("198.51.100.7"), ip("203.0.113.9")});
}

TEST_CASE("render: a NodePort is a virtual server on each NodePort address of the family",
          "[render]") {
    ServicePortPlan p = dual_stack(web(three_endpoints()));
    p.node_port = 30080;
    const Rendered r = render_ports({p});
    REQUIRE(keys(r) == std::vector{tcp("10.96.0.10", 80), tcp("192.168.1.10", 30080),
                                   tcp("192.168.2.10", 30080), tcp("fd00:1::10", 30080),
                                   tcp("fd00:2::10", 30080), tcp("fd00:96::10", 80)});
    for (const char* node : {"192.168.1.10", "192.168.2.10"}) {
        REQUIRE(targets(r, tcp(node, 30080)) == kAllTargets);
    }
    const std::vector<Target> v6 = {{ip("fd00:244:1::7"), 8080}, {ip("fd00:244:2::7"), 8080}};
    for (const ServiceKey& key :
         {tcp("fd00:1::10", 30080), tcp("fd00:2::10", 30080), tcp("fd00:96::10", 80)}) {
        REQUIRE(targets(r, key) == v6);
    }
    // NodePort addresses are the node's own: not on the dummy link.
    REQUIRE(r.link_addresses == std::vector{ip("10.96.0.10"), ip("fd00:96::10")});

    const Rendered without = render_ports({p}, {});
    REQUIRE(keys(without) == std::vector{tcp("10.96.0.10", 80), tcp("fd00:96::10", 80)});
}

TEST_CASE("render: dual-stack splits the endpoints by family", "[render]") {
    const Rendered r = render_ports({dual_stack(web(three_endpoints()))});
    REQUIRE(targets(r, tcp("10.96.0.10", 80)) == kAllTargets);
    REQUIRE(targets(r, tcp("fd00:96::10", 80)) ==
            std::vector<Target>{{ip("fd00:244:1::7"), 8080}, {ip("fd00:244:2::7"), 8080}});
}

TEST_CASE("render: internalTrafficPolicy Local gives the ClusterIP the local endpoints only",
          "[render]") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    p.internal_traffic_policy = TrafficPolicy::kLocal;
    const Rendered r = render_ports({p});
    REQUIRE(targets(r, tcp("10.96.0.10", 80)) == kLocalTarget);
    REQUIRE(targets(r, tcp("192.168.1.10", 30080)) == kAllTargets);
}

TEST_CASE("render: externalTrafficPolicy Local gives external frontends the local endpoints",
          "[render]") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    p.external_ips = {ip("198.51.100.7")};
    p.load_balancer_ips = {ip("203.0.113.9")};
    p.external_traffic_policy = TrafficPolicy::kLocal;
    const Rendered r = render_ports({p});
    REQUIRE(targets(r, tcp("10.96.0.10", 80)) == kAllTargets);
    for (const ServiceKey& key : {tcp("198.51.100.7", 80), tcp("203.0.113.9", 80),
                                  tcp("192.168.1.10", 30080), tcp("192.168.2.10", 30080)}) {
        REQUIRE(targets(r, key) == kLocalTarget);
    }

    // No local endpoint: the external virtual servers exist without real
    // servers (the helper rules drop their traffic); the ClusterIP keeps all.
    ServicePortPlan remote = p;
    remote.cluster_endpoints = {endpoint("10.244.2.7", 8080, false)};
    remote.local_endpoints.clear();
    const Rendered rr = render_ports({remote});
    REQUIRE(targets(rr, tcp("10.96.0.10", 80)) == std::vector<Target>{{ip("10.244.2.7"), 8080}});
    REQUIRE(targets(rr, tcp("198.51.100.7", 80)).empty());
    REQUIRE(targets(rr, tcp("192.168.1.10", 30080)).empty());
}

TEST_CASE("render: a service port without endpoints has its virtual servers and no real server",
          "[render]") {
    ServicePortPlan p = web({});
    p.node_port = 30080;
    p.external_ips = {ip("198.51.100.7")};
    const Rendered r = render_ports({p});
    REQUIRE(r.services.size() == 4);
    for (const auto& [key, service] : r.services) REQUIRE(service.destinations.empty());
    REQUIRE(r.link_addresses == std::vector{ip("10.96.0.10"), ip("198.51.100.7")});
}

TEST_CASE("render: ClientIP affinity is persistence with its timeout", "[render]") {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity = {true, 600};
    p.node_port = 30080;
    ServicePortPlan defaulted = web(three_endpoints());
    defaulted.service = "api";
    defaulted.cluster_ips = {ip("10.96.0.11")};
    defaulted.session_affinity = {true, 0};
    const Rendered r = render_ports({p, defaulted});
    for (const ServiceKey& key : {tcp("10.96.0.10", 80), tcp("192.168.1.10", 30080)}) {
        const VirtualServer& server = r.services.at(key).server;
        REQUIRE(server.persistent);
        REQUIRE(server.timeout_seconds == 600);
    }
    REQUIRE(r.services.at(tcp("10.96.0.11", 80)).server.persistent);
    REQUIRE(r.services.at(tcp("10.96.0.11", 80)).server.timeout_seconds == kDefaultAffinitySeconds);
}

TEST_CASE("render: the annotation's scheduler wins over --ipvs-scheduler", "[render]") {
    ServicePortPlan annotated = web(three_endpoints());
    annotated.ipvs_scheduler = "sh";
    annotated.node_port = 30080;
    ServicePortPlan plain = web(three_endpoints());
    plain.service = "api";
    plain.cluster_ips = {ip("10.96.0.11")};
    BackendOptions o = options();
    o.ipvs_scheduler = "lc";
    const Rendered r = render_ports({annotated, plain}, kNodePortAddresses, o);
    REQUIRE(r.services.at(tcp("10.96.0.10", 80)).server.scheduler == "sh");
    REQUIRE(r.services.at(tcp("192.168.2.10", 30080)).server.scheduler == "sh");
    REQUIRE(r.services.at(tcp("10.96.0.11", 80)).server.scheduler == "lc");
}

TEST_CASE("render: an invalid service port is skipped and counted", "[render]") {
    ServicePortPlan bad = web(three_endpoints());
    bad.service = "bad";
    bad.cluster_ips = {ip("10.96.0.11")};
    bad.port = 0;
    const Rendered r = render_ports({web(three_endpoints()), bad});
    REQUIRE(r.invalid_ports == 1);
    REQUIRE(keys(r) == std::vector{tcp("10.96.0.10", 80)});
    REQUIRE(r.link_addresses == std::vector{ip("10.96.0.10")});
}

TEST_CASE("render: the first service port in plan order keeps a shared virtual server key",
          "[render]") {
    ServicePortPlan first = web(three_endpoints());
    first.service = "a";
    first.external_ips = {ip("198.51.100.7")};
    ServicePortPlan second = web({endpoint("10.244.9.9", 9090, false)});
    second.service = "b";
    second.cluster_ips = {ip("10.96.0.11")};
    second.external_ips = {ip("198.51.100.7")};
    const Rendered r = render_ports({first, second});
    REQUIRE(r.duplicate_servers == 1);
    REQUIRE(targets(r, tcp("198.51.100.7", 80)) == kAllTargets);
    REQUIRE(targets(r, tcp("10.96.0.11", 80)) == std::vector<Target>{{ip("10.244.9.9"), 9090}});
    REQUIRE(r.link_addresses ==
            std::vector{ip("10.96.0.10"), ip("10.96.0.11"), ip("198.51.100.7")});
}
