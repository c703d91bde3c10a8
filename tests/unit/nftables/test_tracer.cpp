// Behaviour of the rendered ruleset, checked with the packet tracer: for
// each scenario of issue 3, where the first packet of a connection goes
// (DNAT targets and their probabilities, reject, drop) and whether it is
// masqueraded.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/nftables/render.h"
#include "tracer.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using namespace sb::rules::nftables::testing;
using namespace sb::rules::testing;

namespace {

Model model_of(std::vector<ServicePortPlan> ports, const BackendOptions& o = options()) {
    RenderResult r = render(plan_on_node_a(std::move(ports)), o);
    REQUIRE(r.errors.empty());
    return std::move(r.model);
}

std::vector<Outcome> trace(const Model& model, const Packet& p) {
    Tracer tracer(model, {kNode, kNode6});
    return tracer.trace(p);
}

}  // namespace

TEST_CASE("ClusterIP TCP from a pod reaches every ready endpoint uniformly, not masqueraded") {
    const Model m = model_of({web(three_endpoints())});
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 80)), kAllTargets, false);
}

TEST_CASE("ClusterIP UDP reaches every endpoint; a port no service uses is rejected") {
    ServicePortPlan dns = web(three_endpoints());
    dns.protocol = Protocol::kUDP;
    dns.port = 53;
    const Model m = model_of({dns});
    require_uniform(trace(m, packet(kPod, ip("10.96.0.10"), 53, IPPROTO_UDP)), kAllTargets, false);
    // kube-proxy's cluster-ips-check: from a pod (forward) and from the node
    // itself (output, after nat).
    REQUIRE(single_fate(trace(m, packet(kPod, ip("10.96.0.10"), 53, IPPROTO_TCP))) ==
            Fate::kReject);
    REQUIRE(single_fate(trace(m, packet(kNode, ip("10.96.0.10"), 54, IPPROTO_UDP, true))) ==
            Fate::kReject);
}

TEST_CASE("ClusterIP traffic from outside the cluster CIDR is masqueraded") {
    const Model m = model_of({web(three_endpoints())});
    require_uniform(trace(m, packet(kOutside, ip("10.96.0.10"), 80)), kAllTargets, true);
}

TEST_CASE("masquerade-all masquerades pod traffic too; no cluster CIDR masquerades none") {
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

TEST_CASE("the node itself reaches a ClusterIP (output hook)") {
    const Model m = model_of({web(three_endpoints())});
    // The node's source address is outside the pod CIDR: masqueraded.
    require_uniform(trace(m, packet(kNode, ip("10.96.0.10"), 80, IPPROTO_TCP, true)), kAllTargets,
                    true);
}

TEST_CASE("a multi-port service sends each port to its own target port") {
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

TEST_CASE("NodePort under externalTrafficPolicy Cluster: every endpoint, masqueraded") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), kAllTargets, true);
    // Not on loopback (kube-proxy's nftables mode does not either).
    const auto loop = trace(m, packet(ip("127.0.0.1"), ip("127.0.0.1"), 30080, IPPROTO_TCP, true));
    REQUIRE(single_fate(loop) == Fate::kAccept);
    // Not on an address that is not the node's.
    const auto other = trace(m, packet(kOutside, ip("192.168.1.99"), 30080));
    REQUIRE(single_fate(other) == Fate::kAccept);
}

TEST_CASE("NodePort under externalTrafficPolicy Local: local endpoints only, client IP kept") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    p.external_traffic_policy = TrafficPolicy::kLocal;
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), {{ip("10.244.1.7"), 8080}}, false);
    // Pods reaching the NodePort use the cluster-wide endpoints (short circuit).
    require_uniform(trace(m, packet(kPod, kNode, 30080)), kAllTargets, false);
}

TEST_CASE("externalTrafficPolicy Local without a local endpoint drops external traffic") {
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

TEST_CASE("a service without endpoints is rejected at once, on every path") {
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
}

TEST_CASE("loadBalancerSourceRanges: allowed sources reach the service, others are dropped") {
    ServicePortPlan p = web(three_endpoints());
    p.load_balancer_ips = {ip("198.51.100.20")};
    p.load_balancer_source_ranges = {prefix("203.0.113.0/24")};
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, ip("198.51.100.20"), 80)), kAllTargets, true);
    REQUIRE(single_fate(trace(m, packet(ip("198.18.0.1"), ip("198.51.100.20"), 80))) ==
            Fate::kDrop);
    // The ClusterIP is not subject to the ranges.
    require_uniform(trace(m, packet(ip("198.18.0.1"), ip("10.96.0.10"), 80)), kAllTargets, true);
}

TEST_CASE("hairpin: an endpoint reaching itself through its service is masqueraded") {
    const Model m = model_of({web(three_endpoints())});
    const auto outcomes = trace(m, packet(ip("10.244.1.7"), ip("10.96.0.10"), 80));
    REQUIRE(outcomes.size() == 3);
    for (const Outcome& o : outcomes) {
        INFO(o.describe());
        REQUIRE(o.dnat);
        REQUIRE(o.masquerade == (o.dnat->first == ip("10.244.1.7")));
    }
}

TEST_CASE("internalTrafficPolicy Local: cluster traffic to local endpoints only, none: drop") {
    ServicePortPlan p = web(three_endpoints());
    p.internal_traffic_policy = TrafficPolicy::kLocal;
    require_uniform(trace(model_of({p}), packet(kPod, ip("10.96.0.10"), 80)),
                    {{ip("10.244.1.7"), 8080}}, false);
    ServicePortPlan remote_only = web({endpoint("10.244.2.7", 8080, false)});
    remote_only.internal_traffic_policy = TrafficPolicy::kLocal;
    REQUIRE(single_fate(trace(model_of({remote_only}), packet(kPod, ip("10.96.0.10"), 80))) ==
            Fate::kDrop);
}

TEST_CASE("external IPs reach every endpoint and are masqueraded under Cluster policy") {
    ServicePortPlan p = web(three_endpoints());
    p.external_ips = {ip("198.51.100.7")};
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, ip("198.51.100.7"), 80)), kAllTargets, true);
    REQUIRE(single_fate(trace(m, packet(kOutside, ip("198.51.100.7"), 81))) == Fate::kAccept);
}

TEST_CASE("dual-stack: IPv6 ClusterIP and NodePort reach IPv6 endpoints") {
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
    require_uniform(trace(m, packet(kOutside6, kNode6, 30080)), v6, true);
    require_uniform(trace(m, packet(kOutside, kNode, 30080)), kAllTargets, true);
}

TEST_CASE("ClientIP affinity: the remembered endpoint is chosen again") {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity.client_ip = true;
    p.session_affinity.timeout_seconds = 2;
    const Model m = model_of({p});
    Tracer tracer(m, {kNode});
    const Packet first = packet(kPod, ip("10.96.0.10"), 80);
    const auto outcomes = tracer.trace(first);
    require_uniform(outcomes, kAllTargets, false);
    const Outcome& chosen = outcomes[1];
    REQUIRE(chosen.affinity_updates.size() == 1);
    tracer.remember(chosen);
    const auto again = tracer.trace(first);
    REQUIRE(again.size() == 1);
    REQUIRE(again[0].dnat == chosen.dnat);
    // Another client is not affected.
    require_uniform(tracer.trace(packet(ip("10.244.1.99"), ip("10.96.0.10"), 80)), kAllTargets,
                    false);
    // The affinity rules carry the service's timeout.
    bool found = false;
    for (const auto& [name, chain] : m.chains) {
        for (const Rule& rule : chain.rules) {
            for (const Expr& e : rule) {
                if (e.kind == ExprKind::kAffinityUpdate) {
                    REQUIRE(e.value == 2);
                    found = true;
                }
            }
        }
    }
    REQUIRE(found);
}

TEST_CASE("traffic unrelated to services passes untouched") {
    const Model m = model_of({web(three_endpoints())});
    const auto outcomes = trace(m, packet(kPod, ip("10.244.2.7"), 8080));
    REQUIRE(single_fate(outcomes) == Fate::kAccept);
    REQUIRE_FALSE(outcomes[0].masquerade);
}

TEST_CASE("NodePort Local reached by the node itself uses every endpoint, masqueraded") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    p.external_traffic_policy = TrafficPolicy::kLocal;
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kNode, kNode, 30080, IPPROTO_TCP, true)), kAllTargets, true);
}

TEST_CASE("--nodeport-addresses limits NodePorts to node addresses inside the prefixes") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    BackendOptions o = options();
    o.nodeport_addresses = {prefix("192.168.1.0/24")};
    const Model m = model_of({p}, o);
    Tracer tracer(m, {kNode, ip("172.16.0.10")});
    require_uniform(tracer.trace(packet(kOutside, kNode, 30080)), kAllTargets, true);
    const auto other = tracer.trace(packet(kOutside, ip("172.16.0.10"), 30080));
    REQUIRE(single_fate(other) == Fate::kAccept);
}

TEST_CASE("an external IP under Local policy with ClientIP affinity keeps local endpoints") {
    ServicePortPlan p = web(three_endpoints());
    p.external_ips = {ip("198.51.100.7")};
    p.external_traffic_policy = TrafficPolicy::kLocal;
    p.session_affinity.client_ip = true;
    const Model m = model_of({p});
    require_uniform(trace(m, packet(kOutside, ip("198.51.100.7"), 80)), {{ip("10.244.1.7"), 8080}},
                    false);
    require_uniform(trace(m, packet(kPod, ip("198.51.100.7"), 80)), kAllTargets, false);
}

namespace {

std::vector<Outcome> render_and_trace(const std::vector<ServicePortPlan>& ports,
                                      const BackendOptions& o, const Packet& p) {
    return trace(model_of(ports, o), p);
}

}  // namespace

TEST_CASE("--detect-local-mode decides ClusterIP masquerade and the Local policy short circuit") {
    for (const LocalTrafficCase& c : local_traffic_cases()) {
        check_local_traffic(c, render_and_trace);
    }
}

TEST_CASE("--detect-local-mode with no prefix of a family detects nothing (no-op detector)") {
    check_no_local_detector(LocalDetectMode::kNodeCidr, render_and_trace);
    check_no_local_detector(LocalDetectMode::kClusterCidr, render_and_trace);
}

TEST_CASE("the Local policy short circuit takes the cluster endpoints, whatever the ITP") {
    check_short_circuit_uses_cluster_endpoints(render_and_trace);
}

TEST_CASE("Local policy without local endpoints: dropped, but local traffic short-circuits") {
    check_local_policy_without_local_endpoints(render_and_trace);
}
