// The Plan: the contract between the daemon and the kernel backends.
//
// A Plan lists, for every service port this node proxies, the addresses and
// ports that lead to it, its policies, and the endpoints to use for cluster
// traffic and for node-local traffic. It is plain data computed by the
// planner (proxy/sync/planner.h) from Kubernetes objects; backends read nothing
// else, so they can be tested with hand-made Plans. Every value in a Plan is
// already validated (addresses parsed, ports in range).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/containers/shared_array.h"
#include "base/containers/shared_sequence.h"
#include "base/ip.h"
#include "base/protocol.h"
#include "base/symbol.h"

namespace sb::rules {

// base's Protocol (base/protocol.h): the API's and the Plan's are one type.
using sb::ip_protocol_number;
using sb::Protocol;
using sb::to_string;

enum class TrafficPolicy : uint8_t { kCluster, kLocal };
const char* to_string(TrafficPolicy policy);  // "Cluster", "Local"

struct Endpoint {
    IpAddress ip;
    uint16_t port = 0;
    bool ready = false;
    bool serving = false;
    bool terminating = false;
    bool is_local = false;  // node_name is this node
    // Interned: a cluster has few distinct node and zone names, and every
    // endpoint names one of each (the backends read neither; the plan's
    // JSON prints them). After the flags, so that the whole is 40 bytes,
    // not 48: a plan holds up to three lists of these per service port.
    Symbol node_name;
    Symbol zone;

    auto operator<=>(const Endpoint&) const = default;
};
static_assert(sizeof(Endpoint) <= 40, "rules::Endpoint grew: see the comment on node_name");

// A service port's endpoints: one shared block (base/containers/shared_array.h).
// Two lists with the same endpoints may share it: the planner gives a port's
// local list its cluster list's block when both hold the same endpoints
// (every endpoint on this node), so a plan holds them once.
using EndpointList = SharedArray<Endpoint>;

struct SessionAffinity {
    bool client_ip = false;
    uint32_t timeout_seconds = 0;  // meaningful when client_ip
    bool operator==(const SessionAffinity&) const = default;
};

// The IPVS schedulers --ipvs-scheduler and the annotation accept: the six
// the project promises (the kernel's ip_vs_<name> modules).
inline constexpr std::array<const char*, 6> kIpvsSchedulers = {"rr", "lc", "dh", "sh", "sed", "nq"};
bool is_ipvs_scheduler(std::string_view name);

// The Service annotation naming a Service's own IPVS scheduler (the name
// kube-proxy users proposed, kubernetes/kubernetes#75556).
inline constexpr const char* kIpvsSchedulerAnnotation = "kube-proxy.kubernetes.io/ipvs-scheduler";

struct ServicePortPlan {
    std::string ns;
    std::string service;
    std::string port_name;
    Protocol protocol = Protocol::kTCP;
    std::vector<IpAddress> cluster_ips;
    uint16_t port = 0;
    uint16_t node_port = 0;  // 0: none
    std::vector<IpAddress> external_ips;
    std::vector<IpAddress> load_balancer_ips;
    std::vector<Prefix> load_balancer_source_ranges;
    TrafficPolicy external_traffic_policy = TrafficPolicy::kCluster;
    TrafficPolicy internal_traffic_policy = TrafficPolicy::kCluster;
    uint16_t health_check_node_port = 0;
    SessionAffinity session_affinity;
    // IPVS mode: the scheduler the Service's kube-proxy.kubernetes.io/ipvs-scheduler
    // annotation names (one of kIpvsSchedulers); empty: --ipvs-scheduler's.
    std::string ipvs_scheduler;
    // Endpoints for traffic under the Cluster policy: ready ones (topology
    // filtered), else serving+terminating ones, else none. Sorted by ip, port.
    EndpointList cluster_endpoints;
    // The same rule over the endpoints on this node. Sorted by ip, port.
    EndpointList local_endpoints;
    // The serving endpoints neither list holds: terminating ones while ready
    // ones exist, ready ones topology left out. No new connection goes to
    // them, but the UDP flows they have are theirs to finish, as kube-proxy
    // keeps the flows of every serving endpoint (rules/conntrack.h); no
    // backend renders them. Sorted by ip, port; usually empty.
    EndpointList other_serving_endpoints;

    // "ns/service:portName/protocol": a stable, unique identity in a Plan.
    std::string id() const;
    bool operator==(const ServicePortPlan&) const = default;
};

// The service ports of a Plan: shared, immutable entries in chunks that
// copies share (base/containers/shared_sequence.h). Copying it copies a pointer per
// chunk, so a partial replan that keeps most entries costs what changed
// (docs/planner.md, "Shared entries"). Reading behaves as a
// std::vector<ServicePortPlan>; a write through a non-const accessor copies
// what another Plan shares first, so a Plan never changes under another.
using ServicePorts = SharedSequence<ServicePortPlan>;

// Which Services (namespace, name) may differ between a Plan and the plan
// it was derived from; the Services not listed have the very same entries.
// It travels with the Plan so that a backend comparing the two can look at
// these Services only (rules/port_changes.h).
struct PlanChanges {
    uint64_t base_revision = 0;  // the revision of the plan this one was derived from
    std::vector<std::pair<std::string, std::string>> services;  // sorted, unique
};

struct Plan {
    std::string node;
    // Sorted by namespace, service, port name, protocol.
    ServicePorts services;
    // The ranges of every ServiceCIDR object (networking.k8s.io/v1), both
    // families, sorted and unique: a new connection to an address in one of
    // them that no service port holds is dropped, as kube-proxy's nftables
    // mode does (docs/nftables.md, "Unallocated ClusterIPs"). Empty while
    // no ServiceCIDR is known (none exists, or the API server does not serve
    // them): then nothing is dropped for it.
    std::vector<Prefix> service_cidrs;
    // Distinct for every plan the planner makes (next_plan_revision()); 0 for
    // a plan made by hand, which no change set can name as its base.
    uint64_t revision = 0;
    // Set when the plan was derived from the plan of `base_revision` by
    // replanning some Services; absent for a plan built whole.
    std::optional<PlanChanges> changes;

    // The node, the service ports and the service CIDRs: revision and
    // changes describe how the plan was made, not what it says.
    bool operator==(const Plan& other) const {
        return node == other.node && services == other.services &&
               service_cidrs == other.service_cidrs;
    }
};

// A process-wide increasing counter, starting at 1. Thread-safe.
uint64_t next_plan_revision();

}  // namespace sb::rules
