// The IPVS mode's helper rules: what IPVS does not do itself, in a small
// nftables table of switchboard's (`inet switchboard-ipvs`), as kube-proxy's
// IPVS mode keeps a few iptables rules keyed by ipsets. IPVS picks an
// endpoint and rewrites the destination (in the input and output hooks,
// after the filter chains here at -110 and before conntrack confirms); the
// table adds, per family:
//   - masquerade marks (nat prerouting/output, -100): ClusterIP traffic as
//     the policy's ClusterIpMasquerade says, external traffic under the
//     Cluster policy; masquerade of marked packets and of hairpin pairs (an
//     endpoint reaching itself) in nat postrouting;
//   - refusals of new connections (filter input/output, -110): reject (or
//     drop, as the policy's Refusal says) for frontends without endpoints,
//     the loadBalancerSourceRanges firewall, and a reject for ports of a
//     service address that no service port proxies (the address is local on
//     sb-ipvs0, so the node's own listeners would answer otherwise).
// Every per-Service fact is a set or map element, so the table's chains do
// not grow with the number of Services (only firewalled LB Services add a
// chain each). Pure: docs/ipvs.md.
#pragma once

#include <string>
#include <vector>

#include "base/ip.h"
#include "rules/backend.h"
#include "rules/nftables/model.h"
#include "rules/nftables/render.h"
#include "rules/plan.h"

namespace sb::rules::ipvs {

inline constexpr const char* kHelperTable = "switchboard-ipvs";

// The fixed chains and the (empty) sets of the table.
nftables::Model render_helper_base(const BackendOptions& options);

// What one service port adds, as a fragment the nftables model reference
// counts (rules/nftables/render.h add_fragment: a key two ports bring stays
// while one still does, with the first one's value). Precondition:
// validate_service(port) succeeded.
nftables::Fragment render_helper_port(const ServicePortPlan& port, const BackendOptions& options);

// The set holding the service addresses of a family (service-ips4 / 6),
// whose unknown ports are rejected.
std::string service_ips_set(IpFamily family);

// The helper table for `plan`: the base, every valid port's fragment and
// `service_addresses`. `service_addresses`: the addresses on
// switchboard's link (rules/ipvs/render.h's link_addresses), whose unknown
// ports are rejected. Service ports that fail validate_service() are
// skipped (the IPVS render counts them).
nftables::Model render_helper_rules(const Plan& plan, const BackendOptions& options,
                                    const std::vector<IpAddress>& service_addresses);

}  // namespace sb::rules::ipvs
