#include "rules/service_policy.h"

#include <algorithm>

#include "rules/local_traffic.h"
#include "rules/naming.h"

namespace sb::rules {

namespace {

Prefix host_prefix(const IpAddress& address) {
    return Prefix(address, address.is_v4() ? 32 : 128);
}

// kube-proxy's TrafficRoute for one policy: Local takes the local set,
// Cluster the cluster set; DROP when endpoints exist but not in that set.
TrafficRoute route_for(TrafficPolicy policy, const FamilyPolicy& f) {
    TrafficRoute route;
    route.endpoints = policy == TrafficPolicy::kLocal ? EndpointSet::kLocal : EndpointSet::kCluster;
    route.has_endpoints = !f.endpoints(route.endpoints).empty();
    route.refusal = f.has_endpoints ? Refusal::kDrop : Refusal::kReject;
    return route;
}

// The firewall of one family: kube-proxy filters the source ranges by family
// and treats a /0 range as "allow any" (no firewall at all).
void decide_firewall(FamilyPolicy& f, const ServicePortPlan& port, const BackendOptions& options) {
    const std::vector<Prefix> ranges = of_family(port.load_balancer_source_ranges, f.family);
    const bool allow_any =
        std::any_of(ranges.begin(), ranges.end(), [](const Prefix& p) { return p.length() == 0; });
    if (f.load_balancer_ips.empty() || ranges.empty() || allow_any) return;
    f.firewall = true;
    f.allowed_sources = ranges;
    const bool holds_node = std::any_of(ranges.begin(), ranges.end(), [&](const Prefix& range) {
        return std::any_of(options.node_ips.begin(), options.node_ips.end(),
                           [&](const IpAddress& node) { return range.contains(node); });
    });
    if (!holds_node) return;
    for (const IpAddress& ip : f.load_balancer_ips) f.allowed_sources.push_back(host_prefix(ip));
}

FamilyPolicy family_policy(const ServicePortPlan& port, const IpAddress& cluster_ip,
                           const BackendOptions& options) {
    FamilyPolicy f;
    f.family = cluster_ip.family();
    f.cluster_ip = cluster_ip;
    f.cluster_endpoints = of_family(port.cluster_endpoints, f.family);
    f.local_endpoints = of_family(port.local_endpoints, f.family);
    f.external_ips = of_family(port.external_ips, f.family);
    f.load_balancer_ips = of_family(port.load_balancer_ips, f.family);
    f.has_node_port = port.node_port != 0;
    // The planner fills both sets whatever the policies, and the cluster set
    // is empty only when no endpoint anywhere is ready or serving and
    // terminating: exactly kube-proxy's hasEndpoints.
    f.has_endpoints = !f.cluster_endpoints.empty() || !f.local_endpoints.empty();

    f.cluster_ip_traffic = route_for(port.internal_traffic_policy, f);
    f.cluster_ip_masquerade = cluster_ip_masquerade(options, f.family);

    const bool externally_accessible =
        f.has_node_port || !f.external_ips.empty() || !f.load_balancer_ips.empty();
    const bool etp_local = port.external_traffic_policy == TrafficPolicy::kLocal;
    f.external_traffic = route_for(port.external_traffic_policy, f);
    f.external_entry = externally_accessible && f.has_endpoints;
    f.external_masquerade = f.external_entry && !etp_local;
    f.short_circuit = f.external_entry && etp_local;
    decide_firewall(f, port, options);

    auto reaches = [&](EndpointSet set) {
        const bool by_cluster_ip =
            f.cluster_ip_traffic.endpoints == set && f.cluster_ip_traffic.has_endpoints;
        const bool by_external = f.external_entry && f.external_traffic.endpoints == set &&
                                 f.external_traffic.has_endpoints;
        const bool by_short_circuit = f.short_circuit && set == EndpointSet::kCluster;
        return by_cluster_ip || by_external || by_short_circuit;
    };
    f.uses_cluster_endpoints = reaches(EndpointSet::kCluster);
    f.uses_local_endpoints = reaches(EndpointSet::kLocal);
    return f;
}

}  // namespace

ClusterIpMasquerade cluster_ip_masquerade(const BackendOptions& options, IpFamily family) {
    if (options.masquerade_all) return ClusterIpMasquerade::kAll;
    return local_matches(options, family).empty() ? ClusterIpMasquerade::kNone
                                                  : ClusterIpMasquerade::kNotLocal;
}

std::optional<HealthCheck> health_check_of(const ServicePortPlan& port) {
    if (port.external_traffic_policy != TrafficPolicy::kLocal || port.health_check_node_port == 0) {
        return std::nullopt;
    }
    HealthCheck check;
    check.node_port = port.health_check_node_port;
    for (const Endpoint& e : port.local_endpoints) {
        if (e.ready) check.local_ready_ips.push_back(e.ip);
    }
    std::sort(check.local_ready_ips.begin(), check.local_ready_ips.end());
    check.local_ready_ips.erase(
        std::unique(check.local_ready_ips.begin(), check.local_ready_ips.end()),
        check.local_ready_ips.end());
    return check;
}

ServicePolicy service_policy(const ServicePortPlan& port, const BackendOptions& options) {
    ServicePolicy policy;
    policy.families.reserve(port.cluster_ips.size());
    for (const IpAddress& cluster_ip : port.cluster_ips) {
        policy.families.push_back(family_policy(port, cluster_ip, options));
    }
    policy.health_check = health_check_of(port);
    return policy;
}

}  // namespace sb::rules
