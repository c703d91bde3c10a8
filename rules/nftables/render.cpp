#include "rules/nftables/render.h"

#include <netinet/in.h>

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "rules/local_traffic.h"
#include "rules/naming.h"
#include "rules/service_policy.h"

namespace sb::rules::nftables {

namespace {

const char* family_digit(IpFamily family) {
    return family == IpFamily::kV4 ? "4" : "6";
}

std::string family_name(const char* base, IpFamily family) {
    return std::string(base) + family_digit(family);
}

const char* kFilterPrerouting = "filter-prerouting";
const char* kFilterForward = "filter-forward";
const char* kClusterIpsCheck = "cluster-ips-check";
const char* kFilterOutputPostDnat = "filter-output-post-dnat";

// Chain names carry 8 base32 characters (40 bits) of the service port id.
constexpr size_t kHashChars = 8;

constexpr IpFamily kFamilies[] = {IpFamily::kV4, IpFamily::kV6};

Prefix host_prefix(const IpAddress& address) {
    return Prefix(address, address.is_v4() ? 32 : 128);
}

// Local traffic goes to `chain` (the short circuit of externalTrafficPolicy
// Local), one rule per way of being local.
void add_local_short_circuit(std::vector<Rule>& rules, const BackendOptions& options,
                             IpFamily family, const std::string& chain) {
    for (const LocalMatch& match : local_matches(options, family)) {
        Rule r = local_match_rule(match, family);
        r.push_back(verdict(VerdictKind::kGoto, chain));
        rules.push_back(std::move(r));
    }
}

// Keeps [a-z0-9-]: what Kubernetes names may hold and nft identifiers accept.
std::string identifier_part(std::string_view text) {
    std::string out;
    for (char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_';
        out += ok ? c : '_';
    }
    return out;
}

void add_rule(Chain& chain, Rule rule) {
    chain.rules.push_back(std::move(rule));
}

Chain make_chain(std::string name, std::optional<Hook> hook = std::nullopt) {
    Chain c;
    c.name = std::move(name);
    c.hook = std::move(hook);
    return c;
}

// The endpoint choice: rule k matches with probability 1/(n-k) among the
// packets that reach it, so every endpoint gets 1/n (the iptables statistic
// cascade). One rule per endpoint keeps the kernel work linear (no anonymous
// numgen map per service: see DESIGN.md's measurements).
void add_endpoint_cascade(Chain& chain, IpFamily family, const ServicePortPlan& port,
                          const std::vector<Endpoint>& endpoints) {
    const uint8_t proto = ip_protocol_number(port.protocol);
    const bool affinity = port.session_affinity.client_ip;
    const uint32_t timeout = port.session_affinity.timeout_seconds != 0
                                 ? port.session_affinity.timeout_seconds
                                 : kDefaultAffinitySeconds;
    if (affinity) {
        add_rule(chain,
                 {nfproto(family), l4proto(proto), affinity_dnat(family, affinity_map(family))});
    }
    const size_t n = endpoints.size();
    for (size_t k = 0; k < n; ++k) {
        Rule rule;
        if (k + 1 < n) rule.push_back(numgen_mod_is_zero(static_cast<uint32_t>(n - k)));
        if (affinity) rule.push_back(nfproto(family));
        rule.push_back(l4proto(proto));
        if (affinity) {
            rule.push_back(affinity_update(family, affinity_map(family), timeout, endpoints[k].ip,
                                           endpoints[k].port));
        }
        rule.push_back(dnat(endpoints[k].ip, endpoints[k].port));
        add_rule(chain, std::move(rule));
    }
}

}  // namespace

// The name predates the other --detect-local-mode modes; kept so upgrades
// replace nothing.
std::string masq_outside_chain(IpFamily family) {
    return family_name("masq-outside-cluster", family);
}

// kube-proxy's nftables mode skips loopback (route_localnet is off, so DNAT
// of 127.0.0.0/8 would not route).
std::vector<Rule> nodeport_address_conditions(const BackendOptions& options, IpFamily family) {
    const Prefix loopback = family == IpFamily::kV4 ? Prefix(IpAddress::v4(0x7f000000), 8)
                                                    : Prefix(*IpAddress::parse("::1"), 128);
    std::vector<Rule> out;
    if (options.nodeport_addresses.empty()) {
        out.push_back({fib_daddr_local(), nfproto(family), daddr(loopback, true)});
        return out;
    }
    for (const Prefix& p : of_family(options.nodeport_addresses, family)) {
        if (loopback.contains(p.address()) && p.length() >= loopback.length()) continue;
        out.push_back({fib_daddr_local(), nfproto(family), daddr(p)});
    }
    return out;
}

Rule local_match_rule(const LocalMatch& match, IpFamily family) {
    switch (match.kind) {
        case LocalMatch::Kind::kSource:
            return {nfproto(family), saddr(match.source)};
        case LocalMatch::Kind::kInterface:
            return {nfproto(family), iifname(match.interface)};
        case LocalMatch::Kind::kInterfacePrefix:
            return {nfproto(family), iifname_prefix(match.interface)};
    }
    return {};
}

std::string services_map(IpFamily f) {
    return family_name("services", f);
}
std::string nodeports_map(IpFamily f) {
    return family_name("nodeports", f);
}
std::string no_endpoints_map(IpFamily f) {
    return family_name("no-endpoints", f);
}
std::string no_endpoint_nodeports_map(IpFamily f) {
    return family_name("no-endpoint-nodeports", f);
}
std::string firewall_map(IpFamily f) {
    return family_name("firewall", f);
}
std::string hairpin_set(IpFamily f) {
    return family_name("hairpin", f);
}
std::string affinity_map(IpFamily f) {
    return family_name("affinity", f);
}
std::string cluster_ips_set(IpFamily f) {
    return family_name("cluster-ips", f);
}
std::string backends_map(IpFamily f, bool local, bool by_port) {
    return family_name(by_port ? (local ? "np-local-backends" : "np-backends")
                               : (local ? "local-backends" : "backends"),
                       f);
}

std::string service_chain_name(const char* kind, IpFamily family, const ServicePortPlan& port) {
    std::string readable = identifier_part(port.ns) + "/" + identifier_part(port.service) + "/" +
                           proto_name(ip_protocol_number(port.protocol)) + "/" +
                           identifier_part(port.port_name);
    std::string name = std::string(kind) + family_digit(family) + "-" +
                       base32_hash(port.id(), kHashChars) + "-" + readable;
    if (name.size() > 200) name.resize(200);
    return name;
}

namespace {

const Verdict kReject{VerdictKind::kGoto, kRejectChain, {}, 0};
const Verdict kDrop{VerdictKind::kDrop, {}, {}, 0};

// The filter hooks' verdict for a route without endpoints.
const Verdict& refusal_verdict(const TrafficRoute& route) {
    return route.refusal == Refusal::kReject ? kReject : kDrop;
}

// The rule ClusterIP traffic to `cluster_ip` passes before its endpoint
// choice, when the policy masquerades some of it.
std::optional<Rule> cluster_ip_masquerade_rule(const FamilyPolicy& policy) {
    if (policy.cluster_ip_masquerade == ClusterIpMasquerade::kNone) return std::nullopt;
    const std::string chain = policy.cluster_ip_masquerade == ClusterIpMasquerade::kAll
                                  ? kMarkForMasqueradeChain
                                  : masq_outside_chain(policy.family);
    return Rule{nfproto(policy.family), daddr(host_prefix(policy.cluster_ip)),
                verdict(VerdictKind::kJump, chain)};
}

// loadBalancerSourceRanges: the LB addresses' traffic passes a chain that
// returns for allowed sources and drops the rest.
void add_firewall(Fragment& out, const FamilyPolicy& policy, const ServicePortPlan& port,
                  uint8_t proto) {
    if (!policy.firewall) return;
    const IpFamily f = policy.family;
    Chain chain = make_chain(service_chain_name("fw", f, port));
    for (const Prefix& source : policy.allowed_sources) {
        add_rule(chain, {nfproto(f), saddr(source), verdict(VerdictKind::kReturn)});
    }
    add_rule(chain, {verdict(VerdictKind::kDrop)});
    for (const IpAddress& ip : policy.load_balancer_ips) {
        out.elements.push_back(ElementRef{firewall_map(f), ElementKey{ip, {}, proto, port.port},
                                          Verdict{VerdictKind::kGoto, chain.name, {}, 0}});
    }
    out.chains.push_back(std::move(chain));
}

// The external frontends of a family: the addresses (keyed with the service
// port) and, with a NodePort, the port alone.
template <class Each>
void for_each_external_frontend(const FamilyPolicy& policy, const ServicePortPlan& port,
                                uint8_t proto, Each each) {
    for (const auto* list : {&policy.external_ips, &policy.load_balancer_ips}) {
        for (const IpAddress& ip : *list) each(false, ElementKey{ip, {}, proto, port.port});
    }
    if (policy.has_node_port) each(true, ElementKey{{}, {}, proto, port.node_port});
}

// The hairpin pair of each address once, however many endpoint lists of the
// service port hold it: the model's reference count then counts service
// ports, and an endpoint in both the cluster and the local list takes no
// count (docs/nftables.md, "Memory").
void add_hairpin_pairs(Fragment& out, IpFamily f, std::vector<IpAddress> addresses) {
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
    const std::string set = hairpin_set(f);
    for (const IpAddress& ip : addresses) out.elements.push_back(ElementRef{set, {ip, ip}, {}});
}

// ClientIP affinity needs the chosen endpoint in the rule that records it, so
// these service ports keep per-service chains with a literal cascade.
void render_chained(Fragment& out, const ServicePortPlan& port, const FamilyPolicy& policy,
                    const BackendOptions& options) {
    const IpFamily f = policy.family;
    const uint8_t proto = ip_protocol_number(port.protocol);
    auto element = [&](std::string set, ElementKey key, Verdict v) {
        out.elements.push_back(ElementRef{std::move(set), key, std::move(v)});
    };
    const std::string svc = service_chain_name("svc", f, port);
    const std::string loc = service_chain_name("loc", f, port);
    const std::string ext = service_chain_name("ext", f, port);
    auto chain_of = [&](EndpointSet set) { return set == EndpointSet::kLocal ? loc : svc; };

    std::vector<IpAddress> hairpin;
    for (const EndpointSet set : {EndpointSet::kCluster, EndpointSet::kLocal}) {
        const std::vector<Endpoint>& eps = policy.endpoints(set);
        const bool used = set == EndpointSet::kCluster ? policy.uses_cluster_endpoints
                                                       : policy.uses_local_endpoints;
        if (!used || eps.empty()) continue;
        Chain chain = make_chain(chain_of(set));
        // ClusterIP traffic that is not local traffic is masqueraded so
        // replies come back through this node (kube-proxy's rule).
        if (policy.cluster_ip_traffic.endpoints == set) {
            if (auto masquerade = cluster_ip_masquerade_rule(policy)) {
                add_rule(chain, std::move(*masquerade));
            }
        }
        add_endpoint_cascade(chain, f, port, eps);
        for (const Endpoint& e : eps) hairpin.push_back(e.ip);
        out.chains.push_back(std::move(chain));
    }
    add_hairpin_pairs(out, f, std::move(hairpin));

    const TrafficRoute& internal = policy.cluster_ip_traffic;
    const ElementKey cluster_key{policy.cluster_ip, {}, proto, port.port};
    if (internal.has_endpoints) {
        element(services_map(f), cluster_key,
                Verdict{VerdictKind::kGoto, chain_of(internal.endpoints)});
    } else {
        element(no_endpoints_map(f), cluster_key, refusal_verdict(internal));
    }

    const TrafficRoute& external = policy.external_traffic;
    if (policy.external_entry) {
        Chain chain = make_chain(ext);
        if (policy.external_masquerade) {
            add_rule(chain, {verdict(VerdictKind::kJump, kMarkForMasqueradeChain)});
        } else if (policy.short_circuit) {
            // The node's own traffic is masqueraded so replies return.
            add_local_short_circuit(chain.rules, options, f, svc);
            add_rule(chain,
                     {fib_saddr_local(), verdict(VerdictKind::kJump, kMarkForMasqueradeChain)});
            add_rule(chain, {fib_saddr_local(), verdict(VerdictKind::kGoto, svc)});
        }
        if (external.has_endpoints) {
            add_rule(chain, {verdict(VerdictKind::kGoto, chain_of(external.endpoints))});
        }
        out.chains.push_back(std::move(chain));
    }
    // What the entry chain leaves undNATed (or all of it, without one) meets
    // the refusal in the filter hooks.
    for_each_external_frontend(policy, port, proto, [&](bool by_port, const ElementKey& key) {
        if (policy.external_entry) {
            element(by_port ? nodeports_map(f) : services_map(f), key,
                    Verdict{VerdictKind::kGoto, ext, {}, 0});
        }
        if (!external.has_endpoints) {
            element(by_port ? no_endpoint_nodeports_map(f) : no_endpoints_map(f), key,
                    refusal_verdict(external));
        }
    });
    add_firewall(out, policy, port, proto);
}

// Builds the shared chains of the map-driven shape. A shared chain's content
// depends only on its name, so every fragment that uses it carries an equal
// copy and the model reference counts it.
class SharedChains {
  public:
    SharedChains(Fragment& out, const FamilyPolicy& policy, const BackendOptions& options)
        : out_(out), policy_(policy), f_(policy.family), options_(options) {}

    // dnat via the backend map: `numgen random mod n` picks the slot.
    std::string dnat(bool local, bool by_port, size_t n) {
        const std::string name = std::string(by_port ? "np-" : "") +
                                 (local ? "local-dnat" : "dnat") + family_digit(f_) + "-" +
                                 std::to_string(n);
        const std::string map = backends_map(f_, local, by_port);
        const uint32_t mod = static_cast<uint32_t>(n);
        // The family check keeps an IPv6 header from being read as IPv4.
        add(name,
            {{nfproto(f_), by_port ? dnat_by_port(f_, map, mod) : dnat_by_address(f_, map, mod)}});
        return name;
    }

    // ClusterIP traffic: the policy's masquerade, then dnat.
    std::string cluster_ip() {
        const TrafficRoute& route = policy_.cluster_ip_traffic;
        const std::string target = dnat(route.endpoints == EndpointSet::kLocal, false,
                                        policy_.endpoints(route.endpoints).size());
        if (policy_.cluster_ip_masquerade == ClusterIpMasquerade::kNone) return target;
        const std::string name = "cip-" + target;
        add(name,
            {{verdict(VerdictKind::kJump, policy_.cluster_ip_masquerade == ClusterIpMasquerade::kAll
                                              ? kMarkForMasqueradeChain
                                              : masq_outside_chain(f_))},
             {verdict(VerdictKind::kGoto, target)}});
        return name;
    }

    // The entry chain of external traffic (external IPs, LB IPs, NodePorts).
    // Precondition: policy.external_entry.
    std::string external(bool by_port) {
        const TrafficRoute& route = policy_.external_traffic;
        const bool local = route.endpoints == EndpointSet::kLocal;
        const size_t n = route.has_endpoints ? policy_.endpoints(route.endpoints).size() : 0;
        if (policy_.external_masquerade) {
            const std::string target = dnat(local, by_port, n);
            const std::string name =
                std::string(by_port ? "np-" : "") + "ext-" + target.substr(by_port ? 3 : 0);
            add(name, {{verdict(VerdictKind::kJump, kMarkForMasqueradeChain)},
                       {verdict(VerdictKind::kGoto, target)}});
            return name;
        }
        std::string name = std::string(by_port ? "np-" : "") + "ext-local" + family_digit(f_) +
                           "-" + std::to_string(n);
        std::vector<Rule> rules;
        if (policy_.short_circuit) {
            // Local traffic and the node itself take the cluster endpoints;
            // the node's own traffic is masqueraded.
            const std::string cluster = dnat(false, by_port, policy_.cluster_endpoints.size());
            name += "-via-" + cluster;
            add_local_short_circuit(rules, options_, f_, cluster);
            rules.push_back(
                {fib_saddr_local(), verdict(VerdictKind::kJump, kMarkForMasqueradeChain)});
            rules.push_back({fib_saddr_local(), verdict(VerdictKind::kGoto, cluster)});
        }
        // Without endpoints for external traffic the rest falls through
        // undNATed to the filter hooks' refusal.
        if (n > 0) rules.push_back({verdict(VerdictKind::kGoto, dnat(local, by_port, n))});
        add(name, std::move(rules));
        return name;
    }

  private:
    void add(const std::string& name, std::vector<Rule> rules) {
        for (const Chain& c : out_.chains) {
            if (c.name == name) return;
        }
        Chain c = make_chain(name);
        c.rules = std::move(rules);
        out_.chains.push_back(std::move(c));
    }

    Fragment& out_;
    const FamilyPolicy& policy_;
    IpFamily f_;
    const BackendOptions& options_;
};

// The shape for every service port without affinity: no chain of its own,
// only map elements (dispatch, backends, hairpin), so an endpoint change is
// element changes only and the kernel need not revalidate the table.
void render_mapped(Fragment& out, const ServicePortPlan& port, const FamilyPolicy& policy,
                   const BackendOptions& options) {
    const IpFamily f = policy.family;
    const uint8_t proto = ip_protocol_number(port.protocol);
    auto element = [&](std::string set, ElementKey key, Verdict v) {
        out.elements.push_back(ElementRef{std::move(set), key, std::move(v)});
    };
    // The backend slots of one frontend for one endpoint set.
    auto backends = [&](EndpointSet set, bool by_port, const ElementKey& frontend) {
        const std::vector<Endpoint>& eps = policy.endpoints(set);
        const std::string map = backends_map(f, set == EndpointSet::kLocal, by_port);
        for (size_t k = 0; k < eps.size(); ++k) {
            element(map, ElementKey{frontend.a, {}, proto, frontend.port, static_cast<uint32_t>(k)},
                    Verdict{VerdictKind::kNone, {}, eps[k].ip, eps[k].port});
        }
    };
    SharedChains shared(out, policy, options);
    std::vector<IpAddress> hairpin;
    for (const auto* list : {&policy.cluster_endpoints, &policy.local_endpoints}) {
        for (const Endpoint& e : *list) hairpin.push_back(e.ip);
    }
    add_hairpin_pairs(out, f, std::move(hairpin));

    const TrafficRoute& internal = policy.cluster_ip_traffic;
    const ElementKey cluster_key{policy.cluster_ip, {}, proto, port.port};
    if (internal.has_endpoints) {
        element(services_map(f), cluster_key, Verdict{VerdictKind::kGoto, shared.cluster_ip()});
        backends(internal.endpoints, false, cluster_key);
    } else {
        element(no_endpoints_map(f), cluster_key, refusal_verdict(internal));
    }

    // External traffic: the entry chain when something there DNATs, and the
    // refusal in the filter hooks for what it leaves (or all of it) undNATed.
    const TrafficRoute& external = policy.external_traffic;
    for_each_external_frontend(policy, port, proto, [&](bool by_port, const ElementKey& key) {
        if (policy.external_entry) {
            element(by_port ? nodeports_map(f) : services_map(f), key,
                    Verdict{VerdictKind::kGoto, shared.external(by_port)});
            if (external.has_endpoints) backends(external.endpoints, by_port, key);
            if (policy.short_circuit && external.endpoints != EndpointSet::kCluster) {
                backends(EndpointSet::kCluster, by_port, key);
            }
        }
        if (!external.has_endpoints) {
            element(by_port ? no_endpoint_nodeports_map(f) : no_endpoints_map(f), key,
                    refusal_verdict(external));
        }
    });
    add_firewall(out, policy, port, proto);
}

}  // namespace

Fragment render_service(const ServicePortPlan& port, const BackendOptions& options) {
    Fragment out;
    for (const FamilyPolicy& policy : service_policy(port, options).families) {
        if (port.session_affinity.client_ip) {
            render_chained(out, port, policy, options);
        } else {
            render_mapped(out, port, policy, options);
        }
        if (policy.reject_unknown_ports) {
            out.elements.push_back(ElementRef{
                cluster_ips_set(policy.family), ElementKey{policy.cluster_ip, {}, 0, 0, 0}, {}});
        }
    }
    return out;
}

Model render_base(const BackendOptions& options) {
    Model m;
    auto chain = [&](const char* name, std::optional<Hook> hook = std::nullopt) -> Chain& {
        Chain& c = m.chains[name];
        c = make_chain(name, std::move(hook));
        return c;
    };
    const uint32_t mark = options.masquerade_mark;
    // Filter hooks run before DNAT (priority -110, as kube-proxy): services
    // without endpoints are rejected and source ranges enforced on the
    // original destination; only new connections are looked at.
    add_rule(chain(kFilterPrerouting, Hook{"filter", "prerouting", -110}),
             {ct_state_new(), verdict(VerdictKind::kJump, kFirewallCheck)});
    Chain& input = chain(kFilterInput, Hook{"filter", "input", -110});
    add_rule(input, {ct_state_new(), verdict(VerdictKind::kJump, kNodeportEndpointsCheck)});
    add_rule(input, {ct_state_new(), verdict(VerdictKind::kJump, kEndpointsCheck)});
    Chain& forward = chain(kFilterForward, Hook{"filter", "forward", -110});
    add_rule(forward, {ct_state_new(), verdict(VerdictKind::kJump, kEndpointsCheck)});
    // After DNAT a new connection still heading for a ClusterIP hit no
    // service port: reject it (kube-proxy's cluster-ips-check).
    add_rule(forward, {ct_state_new(), verdict(VerdictKind::kJump, kClusterIpsCheck)});
    add_rule(chain(kFilterOutputPostDnat, Hook{"filter", "output", -90}),
             {ct_state_new(), verdict(VerdictKind::kJump, kClusterIpsCheck)});
    // Source ranges first, as in prerouting: a source outside them meets the
    // firewall's drop whether or not the service has endpoints.
    Chain& output = chain(kFilterOutput, Hook{"filter", "output", -110});
    add_rule(output, {ct_state_new(), verdict(VerdictKind::kJump, kFirewallCheck)});
    add_rule(output, {ct_state_new(), verdict(VerdictKind::kJump, kEndpointsCheck)});
    add_rule(chain(kNatPrerouting, Hook{"nat", "prerouting", -100}),
             {verdict(VerdictKind::kJump, kServicesChain)});
    add_rule(chain(kNatOutput, Hook{"nat", "output", -100}),
             {verdict(VerdictKind::kJump, kServicesChain)});
    add_rule(chain(kNatPostrouting, Hook{"nat", "postrouting", 100}),
             {verdict(VerdictKind::kJump, kMasquerading)});

    Chain& cluster_ips = chain(kClusterIpsCheck);
    for (IpFamily f : kFamilies) {
        add_rule(cluster_ips, {nfproto(f), set_daddr(f, cluster_ips_set(f)),
                               verdict(VerdictKind::kGoto, kRejectChain)});
    }
    // Its rules come from render_service_cidrs; empty here.
    chain(kUnallocatedClusterIps);
    add_rule(cluster_ips, {verdict(VerdictKind::kGoto, kUnallocatedClusterIps)});
    Chain& firewall = chain(kFirewallCheck);
    Chain& endpoints = chain(kEndpointsCheck);
    Chain& nodeport_endpoints = chain(kNodeportEndpointsCheck);
    Chain& services = chain(kServicesChain);
    for (IpFamily f : kFamilies) {
        add_rule(firewall, {nfproto(f), vmap_daddr_proto_port(f, firewall_map(f))});
        add_rule(endpoints, {nfproto(f), vmap_daddr_proto_port(f, no_endpoints_map(f))});
        add_rule(services, {nfproto(f), vmap_daddr_proto_port(f, services_map(f))});
    }
    for (IpFamily f : kFamilies) {
        for (Rule condition : nodeport_address_conditions(options, f)) {
            Rule check = condition;
            check.push_back(vmap_proto_port(no_endpoint_nodeports_map(f)));
            add_rule(nodeport_endpoints, std::move(check));
            condition.push_back(vmap_proto_port(nodeports_map(f)));
            add_rule(services, std::move(condition));
        }
    }

    Chain& reject = chain(kRejectChain);
    add_rule(reject, {l4proto(IPPROTO_TCP), reject_tcp_reset()});
    add_rule(reject, {reject_port_unreachable()});
    add_rule(chain(kMarkForMasqueradeChain), {mark_set_or(mark)});
    for (IpFamily f : kFamilies) {
        // Marks what is not local traffic (ClusterIP traffic jumps here).
        if (cluster_ip_masquerade(options, f) != ClusterIpMasquerade::kNotLocal) continue;
        const std::vector<LocalMatch> matches = local_matches(options, f);
        Chain& c = m.chains[masq_outside_chain(f)];
        c = make_chain(masq_outside_chain(f));
        for (const LocalMatch& match : matches) {
            Rule r = local_match_rule(match, f);
            r.push_back(verdict(VerdictKind::kReturn));
            add_rule(c, std::move(r));
        }
        add_rule(c, {mark_set_or(mark)});
    }
    Chain& masq = chain(kMasquerading);
    for (IpFamily f : kFamilies) {
        // Hairpin: an endpoint reached itself through a Service; without
        // masquerade it would answer itself directly and drop the reply.
        add_rule(masq,
                 {ct_status_dnat(), nfproto(f), set_saddr_daddr(f, hairpin_set(f)), masquerade()});
    }
    add_rule(masq, {mark_unset(mark), verdict(VerdictKind::kReturn)});
    add_rule(masq, {mark_set_xor(mark)});
    add_rule(masq, {masquerade()});

    for (IpFamily f : kFamilies) {
        auto set = [&](std::string name, SetLayout layout) {
            Set& s = m.sets[name];
            s.name = name;
            s.layout = layout;
            s.family = f;
        };
        set(services_map(f), SetLayout::kAddrProtoPortVerdict);
        set(nodeports_map(f), SetLayout::kProtoPortVerdict);
        set(no_endpoints_map(f), SetLayout::kAddrProtoPortVerdict);
        set(no_endpoint_nodeports_map(f), SetLayout::kProtoPortVerdict);
        set(firewall_map(f), SetLayout::kAddrProtoPortVerdict);
        set(hairpin_set(f), SetLayout::kAddrAddr);
        set(cluster_ips_set(f), SetLayout::kAddr);
        set(affinity_map(f), SetLayout::kAffinity);
        for (const bool local : {false, true}) {
            set(backends_map(f, local, false), SetLayout::kBackendsByAddress);
            set(backends_map(f, local, true), SetLayout::kBackendsByPort);
        }
    }
    return m;
}

Fragment render_service_cidrs(const std::vector<Prefix>& cidrs, std::vector<std::string>* errors) {
    Chain c = make_chain(kUnallocatedClusterIps);
    for (const Prefix& cidr : cidrs) {
        if (Status s = validate_service_cidr(cidr); !s) {
            if (errors) errors->push_back(s.error().message);
            continue;
        }
        // A drop, not a reject, as kube-proxy: nothing answers for an
        // address no Service holds (docs/nftables.md).
        c.rules.push_back({nfproto(cidr.family()), daddr(cidr), verdict(VerdictKind::kDrop)});
    }
    Fragment out;
    out.chains.push_back(std::move(c));
    return out;
}

void add_fragment(Model& model, const Fragment& fragment) {
    for (const Chain& c : fragment.chains) {
        if (model.chain_refs[c.name]++ == 0) model.chains[c.name] = c;
    }
    for (const ElementRef& e : fragment.elements) {
        auto it = model.sets.find(e.set);
        if (it == model.sets.end()) continue;
        Set& set = it->second;
        if (!set.elements.emplace(e.key, e.value).second) ++set.shared_refs[e.key];
    }
}

void remove_fragment(Model& model, const Fragment& fragment) {
    for (const Chain& c : fragment.chains) {
        auto ref = model.chain_refs.find(c.name);
        if (ref == model.chain_refs.end()) continue;
        if (--ref->second == 0) {
            model.chain_refs.erase(ref);
            model.chains.erase(c.name);
        }
    }
    for (const ElementRef& e : fragment.elements) {
        auto it = model.sets.find(e.set);
        if (it == model.sets.end()) continue;
        Set& set = it->second;
        auto shared = set.shared_refs.find(e.key);
        if (shared == set.shared_refs.end()) {
            set.elements.erase(e.key);
        } else if (--shared->second == 0) {
            set.shared_refs.erase(shared);
        }
    }
}

RenderResult render(const Plan& plan, const BackendOptions& options) {
    RenderResult out;
    out.model = render_base(options);
    for (const ServicePortPlan& port : plan.services) {
        if (Status s = validate_service(port); !s) {
            out.errors.push_back(s.error().message);
            continue;
        }
        add_fragment(out.model, render_service(port, options));
    }
    add_fragment(out.model, render_service_cidrs(plan.service_cidrs, &out.errors));
    for (auto& [_, set] : out.model.sets) set.elements.compact();
    return out;
}

}  // namespace sb::rules::nftables
