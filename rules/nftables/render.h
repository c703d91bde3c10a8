// Render: Plan + BackendOptions -> Model (pure, deterministic).
//
// The ruleset shape (docs/nftables.md explains it and the measured costs):
// fixed base chains and global maps keyed by (address . protocol . port) or
// (protocol . port) dispatch in O(1) to small chains shared by every service
// port with the same endpoint count, which DNAT through a global backend map
// keyed by (frontend . `numgen random mod N`). A service port without
// affinity owns no chain, only map elements, so an endpoint change is an
// element change and never makes the kernel revalidate the table. Service
// ports with ClientIP affinity keep a per-service chain with a cascade of
// `numgen random mod (n-k) == 0` rules. Everything a service port
// contributes is one Fragment, so an incremental sync renders only the
// service ports that changed. What a service port means for traffic (which
// endpoints, masquerade, reject or drop, source ranges) comes from
// rules/service_policy.h; this file only turns it into nftables objects.
#pragma once

#include <string>
#include <vector>

#include "rules/backend.h"
#include "rules/local_traffic.h"
#include "rules/nftables/model.h"
#include "rules/plan.h"
#include "rules/validate.h"

namespace sb::rules::nftables {

// Names of the fixed objects (the tracer and tests refer to them).
inline constexpr const char* kServicesChain = "services";
inline constexpr const char* kRejectChain = "reject-chain";
inline constexpr const char* kMarkForMasqueradeChain = "mark-for-masquerade";
// The base chains and the check chains they jump to; the IPVS mode's helper
// table (rules/ipvs/helper_rules.h) names its chains of the same jobs so.
inline constexpr const char* kFilterInput = "filter-input";
inline constexpr const char* kFilterOutput = "filter-output";
inline constexpr const char* kNatPrerouting = "nat-prerouting";
inline constexpr const char* kNatOutput = "nat-output";
inline constexpr const char* kNatPostrouting = "nat-postrouting";
inline constexpr const char* kFirewallCheck = "firewall-check";
inline constexpr const char* kEndpointsCheck = "endpoints-check";
inline constexpr const char* kNodeportEndpointsCheck = "nodeport-endpoints-check";
inline constexpr const char* kMasquerading = "masquerading";
// Where cluster-ips-check goes on for a destination no service port took
// and that is no ClusterIP: one `drop` per service CIDR (Plan::service_cidrs;
// kube-proxy's "Drop traffic to unallocated ClusterIPs"). Empty, so dropping
// nothing, while no ServiceCIDR is known.
inline constexpr const char* kUnallocatedClusterIps = "unallocated-cluster-ips";
inline constexpr uint32_t kDefaultAffinitySeconds = 10800;  // Kubernetes' default

std::string services_map(IpFamily family);      // services4 / services6
std::string nodeports_map(IpFamily family);     // nodeports4 / nodeports6
std::string no_endpoints_map(IpFamily family);  // no-endpoints4 / 6
std::string no_endpoint_nodeports_map(IpFamily family);
std::string firewall_map(IpFamily family);
std::string hairpin_set(IpFamily family);
std::string affinity_map(IpFamily family);
std::string cluster_ips_set(IpFamily family);  // cluster-ips4 / 6: every proxied ClusterIP
// Endpoints by slot: backends4, local-backends4, np-backends4 (NodePorts, keyed
// by port), np-local-backends4; the same with 6.
std::string backends_map(IpFamily family, bool local, bool by_port);

// Marks for masquerade what is not local traffic: masq-outside-cluster4 / 6.
std::string masq_outside_chain(IpFamily family);

// The conditions under which a destination is a NodePort address of the
// node (--nodeport-addresses, never loopback), one alternative per rule.
std::vector<Rule> nodeport_address_conditions(const BackendOptions& options, IpFamily family);

// The terms of one local-traffic match (rules/local_traffic.h), to which the
// caller appends its verdict.
Rule local_match_rule(const LocalMatch& match, IpFamily family);

// Chain names of a service port's own chains, deterministic from its id,
// valid nft identifiers of at most 200 characters: KIND + family digit + "-"
// + 8 base32 characters of a hash of the id + "-" + ns/service/protocol/port
// name. KIND: "fw" (loadBalancerSourceRanges); with affinity also "svc"
// (cluster-policy endpoints), "loc" (local endpoints), "ext" (external entry).
std::string service_chain_name(const char* kind, IpFamily family, const ServicePortPlan& port);

// What one service port contributes to the model.
struct ElementRef {
    std::string set;
    ElementKey key;
    Verdict value;
};
struct Fragment {
    std::vector<Chain> chains;  // its own chains and the shared chains it uses
    std::vector<ElementRef> elements;
};

// Precondition: validate_service(port) succeeded.
Fragment render_service(const ServicePortPlan& port, const BackendOptions& options);

// The unallocated-cluster-ips chain for `cidrs` (a fragment of its own, so
// that a ServiceCIDR change rewrites that one chain and nothing else). A
// CIDR validate_service_cidr refuses gets no rule and an entry in `errors`.
Fragment render_service_cidrs(const std::vector<Prefix>& cidrs, std::vector<std::string>* errors);

// The base chains and the (empty) global sets/maps.
Model render_base(const BackendOptions& options);

// Merging fragments into a model. Chains and elements are reference counted
// (service ports share dnat chains and may share a hairpin pair); a key
// already present keeps its first value. Every element of `model`'s sets must
// have come from add_fragment (render_base adds none).
void add_fragment(Model& model, const Fragment& fragment);
void remove_fragment(Model& model, const Fragment& fragment);

struct RenderResult {
    Model model;
    std::vector<std::string> errors;  // one per skipped service port
};
RenderResult render(const Plan& plan, const BackendOptions& options);

}  // namespace sb::rules::nftables
