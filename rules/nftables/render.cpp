#include "rules/nftables/render.h"

#include <netinet/in.h>

#include <fmt/format.h>

#include "rules/local_traffic.h"
#include "rules/naming.h"

namespace sb::rules::nftables {

namespace {

const char* family_digit(IpFamily family) {
    return family == IpFamily::kV4 ? "4" : "6";
}

std::string family_name(const char* base, IpFamily family) {
    return std::string(base) + family_digit(family);
}

const char* kFilterPrerouting = "filter-prerouting";
const char* kFilterInput = "filter-input";
const char* kFilterForward = "filter-forward";
const char* kFilterOutput = "filter-output";
const char* kNatPrerouting = "nat-prerouting";
const char* kNatOutput = "nat-output";
const char* kNatPostrouting = "nat-postrouting";
const char* kFirewallCheck = "firewall-check";
const char* kEndpointsCheck = "endpoints-check";
const char* kClusterIpsCheck = "cluster-ips-check";
const char* kFilterOutputPostDnat = "filter-output-post-dnat";
const char* kNodeportEndpointsCheck = "nodeport-endpoints-check";
const char* kMasquerading = "masquerading";

// Marks for masquerade what is not local traffic (the name predates the
// other --detect-local-mode modes; kept so upgrades replace nothing).
std::string masq_outside_chain(IpFamily family) {
    return family_name("masq-outside-cluster", family);
}

// Chain names carry 8 base32 characters (40 bits) of the service port id.
constexpr size_t kHashChars = 8;

constexpr IpFamily kFamilies[] = {IpFamily::kV4, IpFamily::kV6};

Prefix host_prefix(const IpAddress& address) {
    return Prefix(address, address.is_v4() ? 32 : 128);
}

// The conditions under which a destination is a NodePort address of the node,
// one alternative per rule. kube-proxy's nftables mode skips loopback
// (route_localnet is off, so DNAT of 127.0.0.0/8 would not route).
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

// The terms of one local-traffic match (rules/local_traffic.h), to which the
// caller appends its verdict.
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

// loadBalancerSourceRanges: the LB addresses' traffic passes a chain that
// returns for allowed sources and drops the rest.
void add_firewall(Fragment& out, IpFamily f, const ServicePortPlan& port, uint8_t proto) {
    if (port.load_balancer_source_ranges.empty()) return;
    Chain chain = make_chain(service_chain_name("fw", f, port));
    for (const Prefix& range : of_family(port.load_balancer_source_ranges, f)) {
        add_rule(chain, {nfproto(f), saddr(range), verdict(VerdictKind::kReturn)});
    }
    add_rule(chain, {verdict(VerdictKind::kDrop)});
    bool used = false;
    for (const IpAddress& ip : port.load_balancer_ips) {
        if (ip.family() != f) continue;
        out.elements.push_back(ElementRef{firewall_map(f), ElementKey{ip, {}, proto, port.port},
                                          Verdict{VerdictKind::kGoto, chain.name, {}, 0}});
        used = true;
    }
    if (used) out.chains.push_back(std::move(chain));
}

// ClientIP affinity needs the chosen endpoint in the rule that records it, so
// these service ports keep per-service chains with a literal cascade.
Fragment render_chained(const ServicePortPlan& port, const BackendOptions& options) {
    Fragment out;
    const uint8_t proto = ip_protocol_number(port.protocol);
    const bool itp_local = port.internal_traffic_policy == TrafficPolicy::kLocal;
    const bool etp_local = port.external_traffic_policy == TrafficPolicy::kLocal;
    auto element = [&](std::string set, ElementKey key, Verdict v) {
        out.elements.push_back(ElementRef{std::move(set), key, std::move(v)});
    };
    const Verdict reject{VerdictKind::kGoto, kRejectChain};
    const Verdict drop{VerdictKind::kDrop, {}};

    for (const IpAddress& cluster_ip : port.cluster_ips) {
        const IpFamily f = cluster_ip.family();
        const std::vector<Endpoint> cluster_eps = of_family(port.cluster_endpoints, f);
        const std::vector<Endpoint> local_eps = of_family(port.local_endpoints, f);
        std::vector<IpAddress> externals;
        for (const auto* list : {&port.external_ips, &port.load_balancer_ips}) {
            for (const IpAddress& ip : *list) {
                if (ip.family() == f) externals.push_back(ip);
            }
        }
        const bool has_external = !externals.empty() || port.node_port != 0;

        const std::string svc = service_chain_name("svc", f, port);
        const std::string loc = service_chain_name("loc", f, port);
        const std::string ext = service_chain_name("ext", f, port);
        const std::vector<Endpoint>& internal_eps = itp_local ? local_eps : cluster_eps;
        const std::string& internal_chain = itp_local ? loc : svc;
        const std::vector<Endpoint>& external_eps = etp_local ? local_eps : cluster_eps;
        const std::string& external_policy_chain = etp_local ? loc : svc;
        const bool has_internal = !internal_eps.empty();
        const bool has_external_eps = has_external && !external_eps.empty();
        // Local traffic and the node's own to an external address of a Local
        // policy take the cluster endpoints, whatever the internal policy and
        // even without local endpoints (kube-proxy's short circuit, "subject
        // to neither policy").
        const bool short_circuit = has_external && etp_local && !cluster_eps.empty();
        // Refused traffic: DROP when endpoints exist but the policy excludes
        // them, else REJECT (kube-proxy).
        const Verdict refuse = cluster_eps.empty() && local_eps.empty() ? reject : drop;

        // The endpoint chains that something dispatches to.
        for (const bool local : {false, true}) {
            const std::vector<Endpoint>& eps = local ? local_eps : cluster_eps;
            const bool is_internal = local == itp_local;
            const bool used = (is_internal && has_internal) ||
                              (has_external_eps && local == etp_local) || (short_circuit && !local);
            if (!used || eps.empty()) continue;
            Chain chain = make_chain(local ? loc : svc);
            if (is_internal) {
                // ClusterIP traffic that is not local traffic is masqueraded
                // so replies come back through this node (kube-proxy's rule).
                const Rule to_cluster_ip{nfproto(f), daddr(host_prefix(cluster_ip))};
                if (options.masquerade_all) {
                    Rule r = to_cluster_ip;
                    r.push_back(verdict(VerdictKind::kJump, kMarkForMasqueradeChain));
                    add_rule(chain, std::move(r));
                } else if (!local_matches(options, f).empty()) {
                    Rule r = to_cluster_ip;
                    r.push_back(verdict(VerdictKind::kJump, masq_outside_chain(f)));
                    add_rule(chain, std::move(r));
                }
            }
            add_endpoint_cascade(chain, f, port, eps);
            for (const Endpoint& e : eps) element(hairpin_set(f), ElementKey{e.ip, e.ip, 0, 0}, {});
            out.chains.push_back(std::move(chain));
        }

        const ElementKey cluster_key{cluster_ip, {}, proto, port.port};
        if (has_internal) {
            element(services_map(f), cluster_key, Verdict{VerdictKind::kGoto, internal_chain});
        } else {
            element(no_endpoints_map(f), cluster_key, refuse);
        }

        if (!has_external) continue;
        // Dispatched to `ext` when something there DNATs; what falls through
        // it (or is not dispatched) meets `refuse` in the filter hooks.
        const bool dispatched = has_external_eps || short_circuit;
        if (dispatched) {
            Chain chain = make_chain(ext);
            if (!etp_local) {
                add_rule(chain, {verdict(VerdictKind::kJump, kMarkForMasqueradeChain)});
            } else if (short_circuit) {
                // The short circuit; the node's own traffic is masqueraded
                // so replies return.
                add_local_short_circuit(chain.rules, options, f, svc);
                add_rule(chain,
                         {fib_saddr_local(), verdict(VerdictKind::kJump, kMarkForMasqueradeChain)});
                add_rule(chain, {fib_saddr_local(), verdict(VerdictKind::kGoto, svc)});
            }
            if (has_external_eps) {
                add_rule(chain, {verdict(VerdictKind::kGoto, external_policy_chain)});
            }
            out.chains.push_back(std::move(chain));
        }
        const Verdict to_ext{VerdictKind::kGoto, ext};
        for (const IpAddress& ip : externals) {
            const ElementKey key{ip, {}, proto, port.port};
            if (dispatched) element(services_map(f), key, to_ext);
            if (!has_external_eps) element(no_endpoints_map(f), key, refuse);
        }
        if (port.node_port != 0) {
            const ElementKey key{{}, {}, proto, port.node_port};
            if (dispatched) element(nodeports_map(f), key, to_ext);
            if (!has_external_eps) element(no_endpoint_nodeports_map(f), key, refuse);
        }

        add_firewall(out, f, port, proto);
    }
    return out;
}

// Builds the shared chains of the map-driven shape. A shared chain's content
// depends only on its name, so every fragment that uses it carries an equal
// copy and the model reference counts it.
class SharedChains {
  public:
    SharedChains(Fragment& out, IpFamily f, const BackendOptions& options)
        : out_(out), f_(f), options_(options) {}

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

    // ClusterIP traffic: masquerade what is not local traffic, then dnat.
    std::string cluster_ip(bool local, size_t n) {
        const std::string target = dnat(local, false, n);
        const bool detects_local = !local_matches(options_, f_).empty();
        if (!options_.masquerade_all && !detects_local) return target;
        const std::string name = "cip-" + target;
        add(name, {{verdict(VerdictKind::kJump, options_.masquerade_all ? kMarkForMasqueradeChain
                                                                        : masq_outside_chain(f_))},
                   {verdict(VerdictKind::kGoto, target)}});
        return name;
    }

    // External traffic (external IPs, LB IPs, NodePorts).
    // Under a Local policy, n_cluster > 0 adds the short circuit to the
    // cluster endpoints.
    std::string external(bool by_port, bool etp_local, size_t n_external, size_t n_cluster) {
        if (!etp_local) {
            const std::string target = dnat(false, by_port, n_external);
            const std::string name =
                std::string(by_port ? "np-" : "") + "ext-" + target.substr(by_port ? 3 : 0);
            add(name, {{verdict(VerdictKind::kJump, kMarkForMasqueradeChain)},
                       {verdict(VerdictKind::kGoto, target)}});
            return name;
        }
        std::string name = std::string(by_port ? "np-" : "") + "ext-local" + family_digit(f_) +
                           "-" + std::to_string(n_external);
        std::vector<Rule> rules;
        if (n_cluster > 0) {
            // Local traffic and the node itself take the cluster endpoints
            // (kube-proxy's short circuit, "subject to neither policy"); the
            // node's own traffic is masqueraded.
            const std::string cluster = dnat(false, by_port, n_cluster);
            name += "-via-" + cluster;
            add_local_short_circuit(rules, options_, f_, cluster);
            rules.push_back(
                {fib_saddr_local(), verdict(VerdictKind::kJump, kMarkForMasqueradeChain)});
            rules.push_back({fib_saddr_local(), verdict(VerdictKind::kGoto, cluster)});
        }
        // Without local endpoints the rest falls through undNATed to the
        // filter hooks' drop.
        if (n_external > 0) {
            rules.push_back({verdict(VerdictKind::kGoto, dnat(true, by_port, n_external))});
        }
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
    IpFamily f_;
    const BackendOptions& options_;
};

// The shape for every service port without affinity: no chain of its own,
// only map elements (dispatch, backends, hairpin), so an endpoint change is
// element changes only and the kernel need not revalidate the table.
Fragment render_mapped(const ServicePortPlan& port, const BackendOptions& options) {
    Fragment out;
    const uint8_t proto = ip_protocol_number(port.protocol);
    const bool itp_local = port.internal_traffic_policy == TrafficPolicy::kLocal;
    const bool etp_local = port.external_traffic_policy == TrafficPolicy::kLocal;
    const Verdict reject{VerdictKind::kGoto, kRejectChain, {}, 0};
    const Verdict drop{VerdictKind::kDrop, {}, {}, 0};
    auto element = [&](std::string set, ElementKey key, Verdict v) {
        out.elements.push_back(ElementRef{std::move(set), key, std::move(v)});
    };
    auto backends = [&](const std::string& map, const IpAddress& address, uint16_t frontend_port,
                        const std::vector<Endpoint>& eps) {
        for (size_t k = 0; k < eps.size(); ++k) {
            element(map, ElementKey{address, {}, proto, frontend_port, static_cast<uint32_t>(k)},
                    Verdict{VerdictKind::kNone, {}, eps[k].ip, eps[k].port});
        }
    };
    for (const IpAddress& cluster_ip : port.cluster_ips) {
        const IpFamily f = cluster_ip.family();
        SharedChains shared(out, f, options);
        const std::vector<Endpoint> cluster_eps = of_family(port.cluster_endpoints, f);
        const std::vector<Endpoint> local_eps = of_family(port.local_endpoints, f);
        const std::vector<Endpoint>& internal = itp_local ? local_eps : cluster_eps;
        const std::vector<Endpoint>& external = etp_local ? local_eps : cluster_eps;
        // As in render_chained: the short circuit, and DROP when endpoints
        // exist but the policy excludes them, else REJECT.
        const bool short_circuit = etp_local && !cluster_eps.empty();
        const Verdict refuse = cluster_eps.empty() && local_eps.empty() ? reject : drop;
        for (const auto* list : {&cluster_eps, &local_eps}) {
            for (const Endpoint& e : *list) element(hairpin_set(f), ElementKey{e.ip, e.ip}, {});
        }

        const ElementKey cluster_key{cluster_ip, {}, proto, port.port};
        if (!internal.empty()) {
            element(services_map(f), cluster_key,
                    Verdict{VerdictKind::kGoto, shared.cluster_ip(itp_local, internal.size())});
            backends(backends_map(f, itp_local, false), cluster_ip, port.port, internal);
        } else {
            element(no_endpoints_map(f), cluster_key, refuse);
        }

        std::vector<IpAddress> externals;
        for (const auto* list : {&port.external_ips, &port.load_balancer_ips}) {
            for (const IpAddress& ip : *list) {
                if (ip.family() == f) externals.push_back(ip);
            }
        }
        // External traffic, for frontends keyed by address or by port: the
        // entry chain when something there DNATs, and `refuse` in the filter
        // hooks for what it leaves (or all of it) undNATed.
        const bool dispatched = !external.empty() || short_circuit;
        auto external_frontend = [&](bool by_port, const ElementKey& key, const std::string& map,
                                     const std::string& refuse_map) {
            if (dispatched) {
                element(map, key,
                        Verdict{VerdictKind::kGoto,
                                shared.external(by_port, etp_local, external.size(),
                                                etp_local ? cluster_eps.size() : 0)});
                backends(backends_map(f, etp_local, by_port), key.a, key.port, external);
                if (etp_local)
                    backends(backends_map(f, false, by_port), key.a, key.port, cluster_eps);
            }
            if (external.empty()) element(refuse_map, key, refuse);
        };
        for (const IpAddress& ip : externals) {
            external_frontend(false, ElementKey{ip, {}, proto, port.port}, services_map(f),
                              no_endpoints_map(f));
        }
        if (port.node_port != 0) {
            external_frontend(true, ElementKey{{}, {}, proto, port.node_port}, nodeports_map(f),
                              no_endpoint_nodeports_map(f));
        }
        add_firewall(out, f, port, proto);
    }
    return out;
}

}  // namespace

Fragment render_service(const ServicePortPlan& port, const BackendOptions& options) {
    Fragment out = port.session_affinity.client_ip ? render_chained(port, options)
                                                   : render_mapped(port, options);
    for (const IpAddress& ip : port.cluster_ips) {
        out.elements.push_back(
            ElementRef{cluster_ips_set(ip.family()), ElementKey{ip, {}, 0, 0, 0}, {}});
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
    Chain& output = chain(kFilterOutput, Hook{"filter", "output", -110});
    add_rule(output, {ct_state_new(), verdict(VerdictKind::kJump, kEndpointsCheck)});
    add_rule(output, {ct_state_new(), verdict(VerdictKind::kJump, kFirewallCheck)});
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
        const std::vector<LocalMatch> matches = local_matches(options, f);
        if (matches.empty() || options.masquerade_all) continue;
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

void add_fragment(Model& model, const Fragment& fragment) {
    for (const Chain& c : fragment.chains) {
        if (model.chain_refs[c.name]++ == 0) model.chains[c.name] = c;
    }
    for (const ElementRef& e : fragment.elements) {
        auto it = model.sets.find(e.set);
        if (it == model.sets.end()) continue;
        if (it->second.refs[e.key]++ == 0) it->second.elements[e.key] = e.value;
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
        auto ref = it->second.refs.find(e.key);
        if (ref == it->second.refs.end()) continue;
        if (--ref->second == 0) {
            it->second.refs.erase(ref);
            it->second.elements.erase(e.key);
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
    return out;
}

}  // namespace sb::rules::nftables
