// The service policy: what a service port means for traffic, decided once
// for every backend (kube-proxy's CategorizeEndpoints and the decisions of
// its proxiers' syncProxyRules: hasEndpoints, hasInternalEndpoints,
// hasExternalEndpoints, usesExternalTrafficChain, the filter verdicts, the
// firewall sources). The planner has already chosen the endpoint sets
// (cluster_endpoints, local_endpoints: ready / serving-terminating fallback,
// topology); the policy decides which set each kind of traffic takes, what
// is masqueraded, what a connection meets when its set is empty, and what a
// health-check node port reports. Backends render this result and derive
// none of it themselves. docs/nftables.md, "Service policy", gives the
// rules and the choices where kube-proxy's own backends disagree.
//
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/ip.h"
#include "rules/backend.h"
#include "rules/plan.h"

namespace sb::rules {

// The frontends of a service port.
enum class TrafficKind : uint8_t { kClusterIp, kExternalIp, kLoadBalancer, kNodePort };

// One of a service port's endpoint sets.
enum class EndpointSet : uint8_t { kCluster, kLocal };

// What a new connection to a frontend without usable endpoints meets (in the
// filter hooks, where nothing rewrote its destination): REJECT when the
// service port has no endpoint at all, DROP when it has some but the
// traffic policy excludes them all.
enum class Refusal : uint8_t { kReject, kDrop };

// Which ClusterIP traffic is masqueraded.
enum class ClusterIpMasquerade : uint8_t {
    kNone,      // no local-traffic detector for the family and no --masquerade-all
    kNotLocal,  // what the detector does not call local (rules/local_traffic.h)
    kAll,       // --masquerade-all
};

// One kind of traffic: the endpoint set it takes, and whether that set has
// endpoints (DNAT there) or not (refused with `refusal`).
struct TrafficRoute {
    EndpointSet endpoints = EndpointSet::kCluster;
    bool has_endpoints = false;
    Refusal refusal = Refusal::kReject;  // meaningful when !has_endpoints
    bool operator==(const TrafficRoute&) const = default;
};

// The policy of a service port in one IP family (the family of one of its
// cluster IPs): kube-proxy runs one proxier per family, each seeing only its
// family's addresses and endpoints.
struct FamilyPolicy {
    IpFamily family = IpFamily::kV4;
    IpAddress cluster_ip;
    // The plan's sets, restricted to this family (sorted by ip, port).
    std::vector<Endpoint> cluster_endpoints;
    std::vector<Endpoint> local_endpoints;
    // The external frontends of this family.
    std::vector<IpAddress> external_ips;
    std::vector<IpAddress> load_balancer_ips;
    bool has_node_port = false;

    // Usable endpoints exist anywhere in the cluster (kube-proxy's
    // hasEndpoints). Without any, every frontend rejects.
    bool has_endpoints = false;

    // ClusterIP traffic: internalTrafficPolicy picks the set.
    TrafficRoute cluster_ip_traffic;
    ClusterIpMasquerade cluster_ip_masquerade = ClusterIpMasquerade::kNone;
    // New connections to this cluster IP on a port no service port of it
    // proxies are rejected (kube-proxy's nftables "cluster-ips" check).
    bool reject_unknown_ports = true;

    // External traffic (external IPs, LB IPs, the NodePort):
    // externalTrafficPolicy picks the set.
    TrafficRoute external_traffic;
    // Something DNATs external traffic: the entry point (kube-proxy's EXT
    // chain) exists. It does whenever the service port has endpoints, even
    // without external ones, for the short circuit.
    bool external_entry = false;
    // Cluster policy: all external traffic is masqueraded (it may leave the
    // node). Local policy: only the short-circuited node's own traffic is.
    bool external_masquerade = false;
    // Local policy with endpoints: local traffic (the detector's matches) and
    // the node's own traffic (source address local, masqueraded) take the
    // cluster endpoints, "subject to neither form of traffic policy".
    bool short_circuit = false;

    // loadBalancerSourceRanges of this family (none of them /0): connections
    // to an LB address from other sources are dropped, whether or not the
    // service port has endpoints. `allowed_sources`: the ranges, then the LB
    // addresses themselves (as host prefixes) when a range holds a node
    // address (options.node_ips): the node's own traffic to a VIP it holds
    // comes from the VIP.
    bool firewall = false;
    std::vector<Prefix> allowed_sources;

    // The endpoint sets that some traffic reaches (kube-proxy's
    // usesClusterPolicyChain / usesLocalPolicyChain); an unused or empty set
    // needs nothing rendered.
    bool uses_cluster_endpoints = false;
    bool uses_local_endpoints = false;

    const std::vector<Endpoint>& endpoints(EndpointSet set) const {
        return set == EndpointSet::kCluster ? cluster_endpoints : local_endpoints;
    }
    const TrafficRoute& route(TrafficKind kind) const {
        return kind == TrafficKind::kClusterIp ? cluster_ip_traffic : external_traffic;
    }
    bool operator==(const FamilyPolicy&) const = default;
};

// What a health-check node port reports for a service port
// (externalTrafficPolicy Local with a healthCheckNodePort).
struct HealthCheck {
    uint16_t node_port = 0;
    // Distinct addresses of the local endpoints that are ready (kube-proxy's
    // LocalReadyEndpoints), sorted. A Service's count is the union over its
    // ports.
    std::vector<IpAddress> local_ready_ips;
    bool operator==(const HealthCheck&) const = default;
};

struct ServicePolicy {
    std::vector<FamilyPolicy> families;  // one per cluster IP, in the plan's order
    std::optional<HealthCheck> health_check;
    bool operator==(const ServicePolicy&) const = default;
};

// Preconditions: validate_service(port) and validate_options(options)
// succeeded.
ServicePolicy service_policy(const ServicePortPlan& port, const BackendOptions& options);

// How ClusterIP traffic of `family` is masqueraded on this node: the same
// for every service port (FamilyPolicy::cluster_ip_masquerade), so backends
// also use it to decide which shared masquerade chains exist.
ClusterIpMasquerade cluster_ip_masquerade(const BackendOptions& options, IpFamily family);

// The health-check part alone (it needs no options); nullopt when the port
// has no health-check node port or its externalTrafficPolicy is Cluster.
std::optional<HealthCheck> health_check_of(const ServicePortPlan& port);

}  // namespace sb::rules
