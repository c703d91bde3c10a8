// The service policy (rules/service_policy.h) on its own: which endpoint set
// each kind of traffic takes, the refusal without endpoints, masquerade, the
// external entry and short circuit, the firewall's sources and the health
// check, as kube-proxy decides them.
#include <catch.hpp>

#include "rules/service_policy.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::testing;

namespace {

const FamilyPolicy& only_family(const ServicePolicy& policy) {
    REQUIRE(policy.families.size() == 1);
    return policy.families[0];
}

FamilyPolicy policy_of(const ServicePortPlan& port, const BackendOptions& o = options()) {
    return only_family(service_policy(port, o));
}

ServicePortPlan with_node_port(ServicePortPlan p, TrafficPolicy etp) {
    p.node_port = 30080;
    p.external_traffic_policy = etp;
    return p;
}

const TrafficRoute kClusterSet{EndpointSet::kCluster, true, Refusal::kDrop};
const TrafficRoute kLocalSet{EndpointSet::kLocal, true, Refusal::kDrop};

}  // namespace

TEST_CASE("a ClusterIP-only service takes the cluster endpoints and needs no external entry") {
    const FamilyPolicy f = policy_of(web(three_endpoints()));
    REQUIRE(f.cluster_ip == ip("10.96.0.10"));
    REQUIRE(f.has_endpoints);
    REQUIRE(f.cluster_ip_traffic == kClusterSet);
    REQUIRE(f.cluster_ip_masquerade == ClusterIpMasquerade::kNotLocal);
    REQUIRE(f.reject_unknown_ports);
    REQUIRE_FALSE(f.external_entry);
    REQUIRE_FALSE(f.short_circuit);
    REQUIRE_FALSE(f.external_masquerade);
    REQUIRE(f.uses_cluster_endpoints);
    REQUIRE_FALSE(f.uses_local_endpoints);
    REQUIRE(f.endpoints(EndpointSet::kCluster).size() == 3);
}

TEST_CASE("without any endpoint every kind of traffic is rejected and nothing is used") {
    ServicePortPlan p = with_node_port(web({}), TrafficPolicy::kLocal);
    p.internal_traffic_policy = TrafficPolicy::kLocal;
    p.external_ips = {ip("198.51.100.7")};
    const FamilyPolicy f = policy_of(p);
    REQUIRE_FALSE(f.has_endpoints);
    for (const TrafficKind kind : {TrafficKind::kClusterIp, TrafficKind::kExternalIp,
                                   TrafficKind::kLoadBalancer, TrafficKind::kNodePort}) {
        REQUIRE_FALSE(f.route(kind).has_endpoints);
        REQUIRE(f.route(kind).refusal == Refusal::kReject);
    }
    REQUIRE_FALSE(f.external_entry);
    REQUIRE_FALSE(f.short_circuit);
    REQUIRE_FALSE(f.uses_cluster_endpoints);
    REQUIRE_FALSE(f.uses_local_endpoints);
}

TEST_CASE("internalTrafficPolicy Local takes the local set; none there: DROP") {
    ServicePortPlan p = web(three_endpoints());
    p.internal_traffic_policy = TrafficPolicy::kLocal;
    FamilyPolicy f = policy_of(p);
    REQUIRE(f.cluster_ip_traffic == kLocalSet);
    REQUIRE(f.uses_local_endpoints);
    REQUIRE_FALSE(f.uses_cluster_endpoints);

    ServicePortPlan remote = web({endpoint("10.244.2.7", 8080, false)});
    remote.internal_traffic_policy = TrafficPolicy::kLocal;
    f = policy_of(remote);
    REQUIRE(f.has_endpoints);
    REQUIRE(f.cluster_ip_traffic == TrafficRoute{EndpointSet::kLocal, false, Refusal::kDrop});
    REQUIRE_FALSE(f.uses_local_endpoints);
}

TEST_CASE("externalTrafficPolicy Cluster masquerades external traffic to the cluster set") {
    const FamilyPolicy f =
        policy_of(with_node_port(web(three_endpoints()), TrafficPolicy::kCluster));
    REQUIRE(f.has_node_port);
    REQUIRE(f.external_traffic == kClusterSet);
    REQUIRE(f.route(TrafficKind::kNodePort) == kClusterSet);
    REQUIRE(f.external_entry);
    REQUIRE(f.external_masquerade);
    REQUIRE_FALSE(f.short_circuit);
}

TEST_CASE("externalTrafficPolicy Local: the local set, the short circuit to the cluster set") {
    FamilyPolicy f = policy_of(with_node_port(web(three_endpoints()), TrafficPolicy::kLocal));
    REQUIRE(f.external_traffic == kLocalSet);
    REQUIRE(f.external_entry);
    REQUIRE_FALSE(f.external_masquerade);
    REQUIRE(f.short_circuit);
    REQUIRE(f.uses_cluster_endpoints);
    REQUIRE(f.uses_local_endpoints);

    // No local endpoint: external traffic is dropped, but the entry stays for
    // the short circuit (kube-proxy's usesExternalTrafficChain).
    f = policy_of(
        with_node_port(web({endpoint("10.244.2.7", 8080, false)}), TrafficPolicy::kLocal));
    REQUIRE(f.external_traffic == TrafficRoute{EndpointSet::kLocal, false, Refusal::kDrop});
    REQUIRE(f.external_entry);
    REQUIRE(f.short_circuit);
    REQUIRE(f.uses_cluster_endpoints);
    REQUIRE_FALSE(f.uses_local_endpoints);
}

TEST_CASE("ClusterIP masquerade follows --masquerade-all and the local-traffic detector") {
    BackendOptions all = options();
    all.masquerade_all = true;
    REQUIRE(policy_of(web(three_endpoints()), all).cluster_ip_masquerade ==
            ClusterIpMasquerade::kAll);
    REQUIRE(policy_of(web(three_endpoints()), BackendOptions{}).cluster_ip_masquerade ==
            ClusterIpMasquerade::kNone);
}

TEST_CASE("each family has its own endpoints and frontends") {
    ServicePortPlan p = with_node_port(web(three_endpoints()), TrafficPolicy::kCluster);
    p.cluster_ips.push_back(ip("fd00:96::10"));
    p.external_ips = {ip("198.51.100.7")};
    const ServicePolicy policy = service_policy(p, options());
    REQUIRE(policy.families.size() == 2);
    const FamilyPolicy& v4 = policy.families[0];
    const FamilyPolicy& v6 = policy.families[1];
    REQUIRE(v4.family == IpFamily::kV4);
    REQUIRE(v4.external_ips == std::vector<IpAddress>{ip("198.51.100.7")});
    REQUIRE(v4.cluster_ip_traffic == kClusterSet);
    // No IPv6 endpoint: IPv6 rejects while IPv4 serves.
    REQUIRE(v6.family == IpFamily::kV6);
    REQUIRE(v6.cluster_ip == ip("fd00:96::10"));
    REQUIRE(v6.external_ips.empty());
    REQUIRE_FALSE(v6.has_endpoints);
    REQUIRE(v6.cluster_ip_traffic.refusal == Refusal::kReject);
    REQUIRE(v6.has_node_port);
    REQUIRE_FALSE(v6.external_entry);
}

TEST_CASE("the firewall: ranges of the family, /0 allows all, node addresses admit the VIPs") {
    ServicePortPlan p = web(three_endpoints());
    p.load_balancer_ips = {ip("198.51.100.20")};
    p.load_balancer_source_ranges = {prefix("203.0.113.0/24"), prefix("2001:db8::/32")};
    FamilyPolicy f = policy_of(p);
    REQUIRE(f.firewall);
    REQUIRE(f.allowed_sources == std::vector<Prefix>{prefix("203.0.113.0/24")});

    BackendOptions node = options();
    node.node_ips = {ip("203.0.113.9")};
    f = policy_of(p, node);
    REQUIRE(f.allowed_sources ==
            std::vector<Prefix>{prefix("203.0.113.0/24"), prefix("198.51.100.20/32")});
    node.node_ips = {ip("192.168.1.10")};
    REQUIRE(policy_of(p, node).allowed_sources.size() == 1);

    ServicePortPlan zero = p;
    zero.load_balancer_source_ranges.push_back(prefix("0.0.0.0/0"));
    REQUIRE_FALSE(policy_of(zero).firewall);
    ServicePortPlan other_family = p;
    other_family.load_balancer_source_ranges = {prefix("2001:db8::/32")};
    REQUIRE_FALSE(policy_of(other_family).firewall);
    ServicePortPlan no_lb = p;
    no_lb.load_balancer_ips.clear();
    REQUIRE_FALSE(policy_of(no_lb).firewall);
    // Without endpoints the firewall stays (the ranges come first).
    ServicePortPlan empty = p;
    empty.cluster_endpoints.clear();
    empty.local_endpoints.clear();
    REQUIRE(policy_of(empty).firewall);
}

TEST_CASE("the health check counts distinct ready local addresses, under the Local policy only") {
    ServicePortPlan p = with_node_port(web(three_endpoints()), TrafficPolicy::kLocal);
    p.health_check_node_port = 32000;
    Endpoint second_port = endpoint("10.244.1.7", 9090, true);
    Endpoint terminating = endpoint("10.244.1.8", 8080, true);
    terminating.ready = false;
    terminating.terminating = true;
    p.local_endpoints.push_back(second_port);
    p.local_endpoints.push_back(terminating);
    const std::optional<HealthCheck> check = service_policy(p, options()).health_check;
    REQUIRE(check);
    REQUIRE(check->node_port == 32000);
    REQUIRE(check->local_ready_ips == std::vector<IpAddress>{ip("10.244.1.7")});
    REQUIRE(health_check_of(p) == check);

    p.external_traffic_policy = TrafficPolicy::kCluster;
    REQUIRE_FALSE(health_check_of(p));
    p.external_traffic_policy = TrafficPolicy::kLocal;
    p.health_check_node_port = 0;
    REQUIRE_FALSE(health_check_of(p));
}
