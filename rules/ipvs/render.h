// Render: Plan + BackendOptions + the node's NodePort addresses -> the
// virtual servers switchboard wants, and the addresses its dummy link must
// carry so that the node accepts their traffic (pure, deterministic).
//
// One virtual server per (address, protocol, port) a service port answers
// on: its ClusterIP, each external IP and LB IP, and its NodePort on each
// NodePort address, in every family of its ClusterIPs. Which endpoints each
// takes comes from rules/service_policy.h (cluster_ip_traffic for the
// ClusterIP, external_traffic for the rest); a virtual server whose route
// has no endpoints exists without real servers, and the helper rules
// (rules/ipvs/helper_rules.h) refuse its traffic. What IPVS cannot express
// (masquerade, hairpin, the short circuit, source ranges) is the helper
// rules' too. docs/ipvs.md gives the shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "rules/backend.h"
#include "rules/ipvs/model.h"
#include "rules/plan.h"

namespace sb::rules::ipvs {

// Persistence timeout of a ClientIP affinity without timeoutSeconds.
inline constexpr uint32_t kDefaultAffinitySeconds = 10800;  // Kubernetes' default

struct Rendered {
    IpvsState services;
    // Sorted, unique: every ClusterIP, external IP and LB IP of a family
    // the service port has a ClusterIP in (what the dummy link carries).
    std::vector<IpAddress> link_addresses;
    // Service ports that failed validate_service() and were skipped.
    size_t invalid_ports = 0;
    // Virtual servers not rendered because an earlier one (in plan order)
    // has the same key: external IPs are not unique in the API, and a
    // frontend may repeat another's address and port.
    size_t duplicate_servers = 0;
};

// `node_port_addresses`: the local addresses NodePorts answer on (the
// backend resolves --nodeport-addresses against the node's interfaces);
// each gets a virtual server per NodePort of its family. Scheduler: the
// service port's annotation, else options.ipvs_scheduler. Real servers
// have weight 1 and no connection counts. Precondition:
// validate_options(options) succeeded.
Rendered render(const Plan& plan, const BackendOptions& options,
                const std::vector<IpAddress>& node_port_addresses);

// What one service port renders (render() of a plan holding only it): the
// backend's incremental sync re-renders the ports that changed.
Rendered render_port(const ServicePortPlan& port, const BackendOptions& options,
                     const std::vector<IpAddress>& node_port_addresses);

}  // namespace sb::rules::ipvs
