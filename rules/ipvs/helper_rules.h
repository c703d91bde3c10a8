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
#include "rules/plan.h"

namespace sb::rules::ipvs {

inline constexpr const char* kHelperTable = "switchboard-ipvs";

// The helper table for `plan`. `service_addresses`: the addresses on
// switchboard's link (rules/ipvs/render.h's link_addresses), whose unknown
// ports are rejected. Service ports that fail validate_service() are
// skipped (the IPVS render counts them).
nftables::Model render_helper_rules(const Plan& plan, const BackendOptions& options,
                                    const std::vector<IpAddress>& service_addresses);

}  // namespace sb::rules::ipvs
