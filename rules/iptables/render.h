// Render: Plan + BackendOptions -> Model (pure, deterministic).
//
// The ruleset follows kube-proxy's iptables mode (pkg/proxy/iptables):
// SWITCHBOARD-SERVICES dispatches on destination address and port to a
// per-service chain (SVC: cluster-policy endpoints, SVL: local endpoints,
// EXT: external entry, FW: loadBalancerSourceRanges), which picks an
// endpoint chain (SEP) with a statistic cascade (1/n, 1/(n-1), ... 1) and
// DNATs there. Masquerading is decided by a mark and done in
// SWITCHBOARD-POSTROUTING. Services without (usable) endpoints are rejected
// or dropped in the filter table, where the destination is still the
// service's address because no nat rule rewrote it. docs/iptables.md.
// What each service port means for traffic comes from
// rules/service_policy.h; this file only turns it into x_tables rules.
#pragma once

#include <string>
#include <vector>

#include "rules/backend.h"
#include "rules/iptables/chain_names.h"
#include "rules/iptables/model.h"
#include "rules/plan.h"
#include "rules/validate.h"

namespace sb::rules::iptables {

// Fixed chains (the tracer and tests refer to them).
inline constexpr const char* kServicesChain = "SWITCHBOARD-SERVICES";
inline constexpr const char* kNodePortsChain = "SWITCHBOARD-NODEPORTS";
inline constexpr const char* kPostroutingChain = "SWITCHBOARD-POSTROUTING";
inline constexpr const char* kMarkMasqChain = "SWITCHBOARD-MARK-MASQ";
inline constexpr const char* kMasqOutsideChain = "SWITCHBOARD-MASQ-OUTSIDE";
inline constexpr const char* kFilterServicesChain = "SWITCHBOARD-FILTER-SERVICES";
inline constexpr const char* kFilterExternalChain = "SWITCHBOARD-FILTER-EXTERNAL";
inline constexpr const char* kFirewallChain = "SWITCHBOARD-FIREWALL";
// filter, hooked first from INPUT and OUTPUT while localhost NodePorts are
// effective (IPv4): drops what reaches 127.0.0.0/8 from elsewhere undNATed.
inline constexpr const char* kLocalnetGuardChain = "SWITCHBOARD-LOCALNET-GUARD";
inline const Prefix kIpv4Loopback{IpAddress::v4(0x7f000000), 8};
inline constexpr uint32_t kDefaultAffinitySeconds = 10800;  // Kubernetes' default

// A service port's chain: kPrefix + KIND + "-" + 12 base32 characters of a
// hash of the port's id (and, for "SEP", the endpoint), at most 28 bytes.
// KIND: "SVC", "SVL", "EXT", "FW", "SEP". `hash`: see chain_names.h.
std::string service_chain_name(const char* kind, const ServicePortPlan& port,
                               const ChainHash& hash = default_chain_hash);
std::string endpoint_chain_name(const ServicePortPlan& port, const Endpoint& endpoint,
                                const ChainHash& hash = default_chain_hash);

// Whether IPv4 NodePorts answer on 127.0.0.0/8 (kube-proxy's iptables
// NewProxier): --iptables-localhost-nodeports is on and --nodeport-addresses
// is empty or has an IPv4 prefix that holds or lies in 127.0.0.0/8
// (NodePortAddresses.ContainsIPv4Loopback). The backend then sets
// net.ipv4.conf.all.route_localnet=1 (without it the kernel drops a packet
// from 127.0.0.1 that DNAT sends off the node's loopback) and renders the
// localnet guard. "primary" (a node address) holds no loopback: off.
bool localhost_node_ports_effective(const BackendOptions& options);

struct RenderResult {
    Model model;
    // One per skipped service port or endpoint (invalid, or its chain name
    // collides with another's).
    std::vector<std::string> errors;
    size_t chain_name_collisions = 0;  // the skips for a collision
};
RenderResult render(const Plan& plan, const BackendOptions& options,
                    const ChainHash& hash = default_chain_hash);

}  // namespace sb::rules::iptables
