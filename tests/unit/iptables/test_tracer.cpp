// Behaviour of the rendered iptables ruleset, checked with the packet
// tracer: for each scenario the nftables backend is held to, where the
// first packet of a connection goes (DNAT targets and their probabilities,
// reject, drop) and whether it is masqueraded.
#include <netinet/in.h>
#include <catch.hpp>

#include <algorithm>

#include "rules/iptables/render.h"
#include "tracer.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::iptables;
using namespace sb::rules::iptables::testing;
using namespace sb::rules::testing;

namespace {

Model model_of(std::vector<ServicePortPlan> ports, const BackendOptions& o = options()) {
    RenderResult r = render(plan_on_node_a(std::move(ports)), o);
    REQUIRE(r.errors.empty());
    return std::move(r.model);
}

std::vector<Outcome> trace(const Model& model, const Packet& p) {
    const FamilyModel& m = p.dst.is_v4() ? model.v4 : model.v6;
    Tracer tracer(m, {kNode, kNode6});
    return tracer.trace(p);
}

}  // namespace

TEST_CASE("iptables: ClusterIP TCP from a pod reaches every ready endpoint uniformly") {
    const Model m = model_of({web(three_endpoints())});
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 80)), kAllTargets, false);
}

TEST_CASE("iptables: ClusterIP UDP reaches every endpoint; TCP on a UDP-only port does not") {
    ServicePortPlan dns = web(three_endpoints());
    dns.protocol = Protocol::kUDP;
    dns.port = 53;
    const Model m = model_of({dns});
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 53, IPPROTO_UDP)), kAllTargets, false);
    REQUIRE(single_fate(trace(m, packet(kPod, ip("10.96.0.10"), 53, IPPROTO_TCP))) ==
            Fate::kAccept);
}

TEST_CASE("iptables: ClusterIP traffic from outside the cluster CIDR is masqueraded") {
    const Model m = model_of({web(three_endpoints())});
    require_uniform(trace(m, packet(kOutside, ip("10.96.0.10"), 80)), kAllTargets, true);
}

TEST_CASE("iptables: masquerade-all masquerades pod traffic; no cluster CIDR masquerades none") {
    BackendOptions all = options();
    all.masquerade_all = true;
    require_uniform(
        trace(model_of({web(three_endpoints())}, all), packet(kPod, ip("10.96.0.10"), 80)),
        kAllTargets, true);
    BackendOptions none;
    require_uniform(
        trace(model_of({web(three_endpoints())}, none), packet(kOutside, ip("10.96.0.10"), 80)),
        kAllTargets, false);
}

TEST_CASE("iptables: the node itself reaches a ClusterIP (OUTPUT), masqueraded") {
    const Model m = model_of({web(three_endpoints())});
    require_uniform(trace(m, packet(kNode, ip("10.96.0.10"), 80, IPPROTO_TCP, true)), kAllTargets,
                    true);
}

TEST_CASE("iptables: a multi-port service sends each port to its own target port") {
    ServicePortPlan http = web({endpoint("10.244.1.7", 8080, true)});
    ServicePortPlan metrics = web({endpoint("10.244.1.7", 9091, true)});
    metrics.port_name = "metrics";
    metrics.port = 9090;
    const Model m = model_of({http, metrics});
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 80)), {{ip("10.244.1.7"), 8080}},
                    false);
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 9090)), {{ip("10.244.1.7"), 9091}},
                    false);
}

TEST_CASE("iptables: NodePort under externalTrafficPolicy Cluster: every endpoint, masqueraded") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), kAllTargets, true);
    // The node reaching its own NodePort.
    require_uniform(trace(m, packet(kNode, kNode, 30080, IPPROTO_TCP, true)), kAllTargets, true);
    // Not on loopback (route_localnet is off).
    const auto loop = trace(m, packet(ip("127.0.0.1"), ip("127.0.0.1"), 30080, IPPROTO_TCP, true));
    REQUIRE(single_fate(loop) == Fate::kAccept);
    // Not on an address that is not the node's.
    REQUIRE(single_fate(trace(m, packet(kOutside, ip("192.168.1.99"), 30080))) == Fate::kAccept);
}

TEST_CASE("iptables: --nodeport-addresses limits NodePorts to local addresses in the prefixes") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    BackendOptions o = options();
    o.nodeport_addresses = {prefix("192.168.1.0/24")};
    const Model m = model_of({p}, o);
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), kAllTargets, true);
    Tracer other(m.v4, {ip("172.16.0.1")});
    REQUIRE(single_fate(other.trace(packet(kOutside, ip("172.16.0.1"), 30080))) == Fate::kAccept);
}

TEST_CASE("iptables: NodePort under externalTrafficPolicy Local: local endpoints, client kept") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    p.external_traffic_policy = TrafficPolicy::kLocal;
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), {{ip("10.244.1.7"), 8080}}, false);
    // Pods reaching the NodePort use the cluster-wide endpoints (short circuit).
    require_uniform(trace(m, packet(kPod, kNode, 30080)), kAllTargets, false);
    // The node itself too, masqueraded so that replies come back.
    require_uniform(trace(m, packet(kNode, kNode, 30080, IPPROTO_TCP, true)), kAllTargets, true);
}

TEST_CASE("iptables: externalTrafficPolicy Local without a local endpoint drops external traffic") {
    ServicePortPlan p = web({endpoint("10.244.2.7", 8080, false)});
    p.node_port = 30080;
    p.external_ips = {ip("198.51.100.7")};
    p.external_traffic_policy = TrafficPolicy::kLocal;
    const Model m = model_of({p});
    REQUIRE(single_fate(trace(m, packet(kOutside, kNode, 30080))) == Fate::kDrop);
    REQUIRE(single_fate(trace(m, packet(kOutside, ip("198.51.100.7"), 80))) == Fate::kDrop);
    // Cluster traffic still works.
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 80)), {{ip("10.244.2.7"), 8080}},
                    false);
}

TEST_CASE("iptables: a service without endpoints is rejected at once, on every path") {
    ServicePortPlan p = web({});
    p.node_port = 30080;
    p.external_ips = {ip("198.51.100.7")};
    const Model m = model_of({p});
    REQUIRE(single_fate(trace(m, packet(kPod, ip("10.96.0.10"), 80))) == Fate::kReject);
    REQUIRE(single_fate(trace(m, packet(kNode, ip("10.96.0.10"), 80, IPPROTO_TCP, true))) ==
            Fate::kReject);
    REQUIRE(single_fate(trace(m, packet(kOutside, kNode, 30080))) == Fate::kReject);
    REQUIRE(single_fate(trace(m, packet(kOutside, ip("198.51.100.7"), 80))) == Fate::kReject);
    ServicePortPlan udp = p;
    udp.protocol = Protocol::kUDP;
    udp.port_name = "dns";
    REQUIRE(single_fate(trace(model_of({udp}), packet(kPod, ip("10.96.0.10"), 80, IPPROTO_UDP))) ==
            Fate::kReject);
    // Other ports of the same address are untouched.
    REQUIRE(single_fate(trace(m, packet(kPod, ip("10.96.0.10"), 81))) == Fate::kAccept);
}

TEST_CASE("iptables: loadBalancerSourceRanges: allowed sources pass, others are dropped") {
    ServicePortPlan p = web(three_endpoints());
    p.load_balancer_ips = {ip("198.51.100.20")};
    p.load_balancer_source_ranges = {prefix("203.0.113.0/24")};
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, ip("198.51.100.20"), 80)), kAllTargets, true);
    REQUIRE(single_fate(trace(m, packet(ip("198.18.0.1"), ip("198.51.100.20"), 80))) ==
            Fate::kDrop);
    // The ClusterIP is not subject to the ranges.
    require_uniform(trace(m, packet(ip("198.18.0.1"), ip("10.96.0.10"), 80)), kAllTargets, true);
    // Without ranges every source reaches the LB address.
    ServicePortPlan open = p;
    open.load_balancer_source_ranges.clear();
    require_uniform(trace(model_of({open}), packet(ip("198.18.0.1"), ip("198.51.100.20"), 80)),
                    kAllTargets, true);
}

TEST_CASE("iptables: hairpin: an endpoint reaching itself through its service is masqueraded") {
    const Model m = model_of({web(three_endpoints())});
    const auto outcomes = trace(m, packet(ip("10.244.1.7"), ip("10.96.0.10"), 80));
    REQUIRE(outcomes.size() == 3);
    for (const Outcome& o : outcomes) {
        INFO(o.describe());
        REQUIRE(o.dnat);
        REQUIRE(o.masquerade == (o.dnat->first == ip("10.244.1.7")));
    }
}

TEST_CASE("iptables: internalTrafficPolicy Local: local endpoints only, none: drop") {
    ServicePortPlan p = web(three_endpoints());
    p.internal_traffic_policy = TrafficPolicy::kLocal;
    require_uniform(trace(model_of({p}), packet(kPod, ip("10.96.0.10"), 80)),
                    {{ip("10.244.1.7"), 8080}}, false);
    ServicePortPlan remote_only = web({endpoint("10.244.2.7", 8080, false)});
    remote_only.internal_traffic_policy = TrafficPolicy::kLocal;
    REQUIRE(single_fate(trace(model_of({remote_only}), packet(kPod, ip("10.96.0.10"), 80))) ==
            Fate::kDrop);
}

TEST_CASE("iptables: external IPs reach every endpoint, masqueraded under Cluster policy") {
    ServicePortPlan p = web(three_endpoints());
    p.external_ips = {ip("198.51.100.7")};
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, ip("198.51.100.7"), 80)), kAllTargets, true);
    REQUIRE(single_fate(trace(m, packet(kOutside, ip("198.51.100.7"), 81))) == Fate::kAccept);
}

TEST_CASE("iptables: dual-stack: IPv6 ClusterIP and NodePort reach IPv6 endpoints") {
    ServicePortPlan p = web(three_endpoints());
    p.cluster_ips.push_back(ip("fd00:96::10"));
    p.node_port = 30080;
    const Endpoint v6a = endpoint("fd00:244:1::7", 8080, true);
    const Endpoint v6b = endpoint("fd00:244:2::7", 8080, false);
    p.cluster_endpoints.push_back(v6a);
    p.cluster_endpoints.push_back(v6b);
    p.local_endpoints.push_back(v6a);
    const Model m = model_of({p});
    const std::vector<Destination> v6 = {{v6a.ip, 8080}, {v6b.ip, 8080}};
    require_uniform(trace(m, packet(ip("fd00:244:0:1::9"), ip("fd00:96::10"), 80)), v6, false);
    require_uniform(trace(m, packet(kOutside6, ip("fd00:96::10"), 80)), v6, true);
    require_uniform(trace(m, packet(kOutside6, kNode6, 30080)), v6, true);
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), kAllTargets, true);
    // ::1 is not a NodePort address.
    REQUIRE(single_fate(trace(m, packet(ip("::1"), ip("::1"), 30080, IPPROTO_TCP, true))) ==
            Fate::kAccept);
}

TEST_CASE("iptables: ClientIP affinity: the remembered endpoint is chosen again") {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity.client_ip = true;
    p.session_affinity.timeout_seconds = 2;
    const Model m = model_of({p});
    Tracer tracer(m.v4, {kNode});
    const Packet first = packet(kPod, ip("10.96.0.10"), 80);
    const auto outcomes = tracer.trace(first);
    require_uniform(outcomes, kAllTargets, false);
    const Outcome& chosen = outcomes[1];
    REQUIRE(chosen.recent_sets.size() == 1);
    tracer.remember(chosen);
    const auto again = tracer.trace(first);
    REQUIRE(again.size() == 1);
    REQUIRE(again[0].dnat == chosen.dnat);
    // Another client is not affected.
    require_uniform(tracer.trace(packet(ip("10.244.1.99"), ip("10.96.0.10"), 80)), kAllTargets,
                    false);
    // The checks carry the service's timeout; default 10800 s.
    auto timeouts = [](const Model& model) {
        std::vector<uint32_t> out;
        for (const auto& [name, chain] : model.v4.nat.chains) {
            for (const Rule& rule : chain.rules) {
                if (rule.recent == RecentKind::kCheck) out.push_back(rule.recent_seconds);
            }
        }
        return out;
    };
    REQUIRE(timeouts(m) == std::vector<uint32_t>{2, 2, 2});
    p.session_affinity.timeout_seconds = 0;
    REQUIRE(timeouts(model_of({p})) == std::vector<uint32_t>{10800, 10800, 10800});
}

TEST_CASE("iptables: traffic unrelated to services passes untouched") {
    const Model m = model_of({web(three_endpoints())});
    const auto outcomes = trace(m, packet(kPod, ip("10.244.2.7"), 8080));
    REQUIRE(single_fate(outcomes) == Fate::kAccept);
    REQUIRE_FALSE(outcomes[0].masquerade);
}

namespace {

std::vector<Outcome> render_and_trace(const std::vector<ServicePortPlan>& ports,
                                      const BackendOptions& o, const Packet& p) {
    return trace(model_of(ports, o), p);
}

}  // namespace

TEST_CASE("iptables: --detect-local-mode decides ClusterIP masquerade and the short circuit") {
    for (const LocalTrafficCase& c : local_traffic_cases()) {
        check_local_traffic(c, render_and_trace);
    }
}

TEST_CASE("iptables: --detect-local-mode with no prefix of a family detects nothing") {
    check_no_local_detector(LocalDetectMode::kNodeCidr, render_and_trace);
    check_no_local_detector(LocalDetectMode::kClusterCidr, render_and_trace);
}

TEST_CASE(
    "iptables: the Local policy short circuit takes the cluster endpoints, whatever the ITP") {
    check_short_circuit_uses_cluster_endpoints(render_and_trace);
}

TEST_CASE(
    "iptables: Local policy without local endpoints: dropped, but local traffic short-circuits") {
    check_local_policy_without_local_endpoints(render_and_trace);
}
