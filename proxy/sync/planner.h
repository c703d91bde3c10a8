// The planner: which service ports this node proxies, and to which endpoints.
//
// A pure, deterministic function of (Services, EndpointSlices, this Node,
// options) -> rules::Plan, following kube-proxy's pkg/proxy
// (serviceport.go, endpointslicecache.go, topology.go). The rules and the
// choices made where kube-proxy's behaviour needed interpreting are in
// docs/planner.md. Thread safety: the functions share no state; call them
// from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "rules/plan.h"
#include "watch/objects.h"
#include "watch/store.h"

namespace sb::proxy {

struct PlannerOptions {
    // This node's name (--hostname-override): endpoints whose nodeName
    // equals it are local, and the Node of that name gives the zone for
    // topology hints.
    std::string node_name;
    // --dns-local-address: addresses this node answers DNS on itself. A
    // ClusterIP among them gets no rules (the node's own address receives
    // the traffic); a Service left with no other ClusterIP is not proxied.
    std::vector<IpAddress> local_dns_addresses = {};
};

// Pure and deterministic (sorted output, see rules/plan.h). With `reuse`
// (the plan computed before), a port equal to reuse's port of the same
// identity takes reuse's shared entry instead of a new copy, so a full
// replan holds one copy of what did not change, not two (the result is the
// same plan either way).
rules::Plan build_plan(const watch::Snapshot& snapshot, const PlannerOptions& options,
                       const rules::Plan* reuse = nullptr);

// The ranges of every ServiceCIDR in `snapshot`, sorted and unique
// (rules::Plan::service_cidrs). Costs the number of ServiceCIDRs (a handful).
std::vector<Prefix> service_cidrs_of(const watch::Snapshot& snapshot);

// The service ports of one Service (empty when it is not proxied), for
// incremental planning. `slices` are the Service's EndpointSlices (those
// labelled with its name, in its namespace: its watch::ServiceEntry's);
// their order does not matter.
// The result is sorted by port name, then protocol.
std::vector<rules::ServicePortPlan> plan_service(
    const watch::Service& service,
    const std::vector<std::shared_ptr<const watch::EndpointSlice>>& slices,
    const watch::Node* node,  // this node, nullptr when unknown
    const PlannerOptions& options);

}  // namespace sb::proxy
