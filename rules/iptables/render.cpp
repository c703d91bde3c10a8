#include "rules/iptables/render.h"

#include <netinet/in.h>

#include <set>

#include <fmt/format.h>

#include "rules/local_traffic.h"
#include "rules/naming.h"
#include "rules/service_policy.h"

namespace sb::rules::iptables {

namespace {

Prefix host(const IpAddress& address) {
    return Prefix(address, address.is_v4() ? 32 : 128);
}

Target jump(std::string chain) {
    Target t;
    t.kind = TargetKind::kJump;
    t.chain = std::move(chain);
    return t;
}

Target simple(TargetKind kind) {
    Target t;
    t.kind = kind;
    return t;
}

Target mark_target(TargetKind kind, uint32_t mark) {
    Target t;
    t.kind = kind;
    t.mark = mark;
    return t;
}

Target reject_for(uint8_t proto) {
    return simple(proto == IPPROTO_TCP ? TargetKind::kRejectTcpReset
                                       : TargetKind::kRejectPortUnreachable);
}

Rule rule_to(Target target) {
    Rule r;
    r.target = std::move(target);
    return r;
}

// A rule matching `address`:port of `proto`.
Rule frontend(const IpAddress& address, uint8_t proto, uint16_t port, std::string comment,
              Target target) {
    Rule r;
    r.destination = host(address);
    r.proto = proto;
    r.dport = port;
    r.comment = std::move(comment);
    r.target = std::move(target);
    return r;
}

// A rule to `target` for the packets one local-traffic match
// (rules/local_traffic.h) recognises.
Rule local_match_rule(const LocalMatch& match, Target target) {
    Rule r = rule_to(std::move(target));
    switch (match.kind) {
        case LocalMatch::Kind::kSource:
            r.source = match.source;
            break;
        case LocalMatch::Kind::kInterface:
            r.in_interface = match.interface;
            break;
        case LocalMatch::Kind::kInterfacePrefix:
            r.in_interface = match.interface + "+";
            break;
    }
    return r;
}

Prefix loopback_of(IpFamily family) {
    return family == IpFamily::kV4 ? kIpv4Loopback : host(*IpAddress::parse("::1"));
}

// Whether `outer` holds all of `inner` and more.
bool strictly_contains(const Prefix& outer, const Prefix& inner) {
    return outer.length() < inner.length() && outer.contains(inner.address());
}

// The destinations that are NodePort addresses, one rule template each
// (addrtype LOCAL). Loopback is left out unless localhost NodePorts are on
// (IPv4 only): kube-proxy's `! -d 127.0.0.0/8` (`::1/128`) for every local
// address, and no rule for a --nodeport-addresses prefix inside loopback. A
// prefix that holds loopback and more has loopback cut out by
// loopback_return() in the nat table; the filter table's refusals keep it,
// as kube-proxy's (`--dst-type LOCAL` alone) do.
std::vector<Rule> nodeport_conditions(const BackendOptions& options, IpFamily family) {
    const bool localhost = family == IpFamily::kV4 && localhost_node_ports_effective(options);
    const Prefix loopback = loopback_of(family);
    std::vector<Rule> out;
    if (options.nodeport_addresses.empty()) {
        Rule r;
        if (!localhost) {
            r.destination = loopback;
            r.destination_negate = true;
        }
        r.dst_type_local = true;
        out.push_back(r);
        return out;
    }
    for (const Prefix& p : of_family(options.nodeport_addresses, family)) {
        if (!localhost && loopback.contains(p.address()) && p.length() >= loopback.length()) {
            continue;
        }
        Rule r;
        r.destination = p;
        r.dst_type_local = true;
        out.push_back(r);
    }
    return out;
}

// `-d LOOPBACK -j RETURN`, placed before the NodePort dispatch, when a
// --nodeport-addresses prefix holds loopback and more and localhost NodePorts
// are off (IPv6: always): the dispatch rule alone would take 127.0.0.1 too.
std::optional<Rule> loopback_return(const BackendOptions& options, IpFamily family) {
    if (family == IpFamily::kV4 && localhost_node_ports_effective(options)) return std::nullopt;
    const Prefix loopback = loopback_of(family);
    for (const Prefix& p : of_family(options.nodeport_addresses, family)) {
        if (strictly_contains(p, loopback)) {
            Rule r = rule_to(simple(TargetKind::kReturn));
            r.destination = loopback;
            r.comment = "no NodePorts on loopback";
            return r;
        }
    }
    return std::nullopt;
}

// kube-proxy's martian guard (KUBE-FIREWALL's "block incoming localnet
// connections", https://issue.k8s.io/90259): with route_localnet=1 a
// packet from elsewhere addressed to 127.0.0.0/8 would reach services bound
// to loopback; only those a NodePort rule DNATed (and their connections)
// may pass.
Rule localnet_guard() {
    Rule r = rule_to(simple(TargetKind::kDrop));
    r.source = kIpv4Loopback;
    r.source_negate = true;
    r.destination = kIpv4Loopback;
    r.ctstate = kCtStateRelated | kCtStateEstablished | kCtStateDnat;
    r.ctstate_negate = true;
    r.comment = "block incoming localnet connections";
    return r;
}

class Renderer {
  public:
    Renderer(FamilyModel& model, const BackendOptions& options, const ChainHash& hash)
        : m_(model), options_(options), family_(model.family), hash_(hash) {}

    void base() {
        const uint32_t mark = options_.masquerade_mark;
        for (const char* name :
             {kServicesChain, kNodePortsChain, kPostroutingChain, kMarkMasqChain}) {
            chain(m_.nat, name);
        }
        for (const char* name : {kFilterServicesChain, kFilterExternalChain, kFirewallChain}) {
            chain(m_.filter, name);
        }
        m_.nat.hooks = {{"PREROUTING", rule_to(jump(kServicesChain))},
                        {"OUTPUT", rule_to(jump(kServicesChain))},
                        {"POSTROUTING", rule_to(jump(kPostroutingChain))}};
        const bool guard = family_ == IpFamily::kV4 && localhost_node_ports_effective(options_);
        if (guard) chain(m_.filter, kLocalnetGuardChain).rules.push_back(localnet_guard());
        for (const char* builtin : {"INPUT", "FORWARD", "OUTPUT"}) {
            if (guard && std::string(builtin) != "FORWARD") {
                m_.filter.hooks.push_back({builtin, rule_to(jump(kLocalnetGuardChain))});
            }
            if (std::string(builtin) != "INPUT") {
                m_.filter.hooks.push_back({builtin, rule_to(jump(kFilterServicesChain))});
            }
            m_.filter.hooks.push_back({builtin, rule_to(jump(kFilterExternalChain))});
            m_.filter.hooks.push_back({builtin, rule_to(jump(kFirewallChain))});
        }
        chain(m_.nat, kMarkMasqChain)
            .rules.push_back(rule_to(mark_target(TargetKind::kMarkOr, mark)));
        Chain& post = chain(m_.nat, kPostroutingChain);
        Rule unmarked = rule_to(simple(TargetKind::kReturn));
        unmarked.mark_match = true;
        unmarked.mark_invert = true;
        unmarked.mark_value = unmarked.mark_mask = mark;
        post.rules.push_back(unmarked);
        // Clear the bit so a packet that is re-routed is not masqueraded twice.
        post.rules.push_back(rule_to(mark_target(TargetKind::kMarkXor, mark)));
        post.rules.push_back(rule_to(simple(TargetKind::kMasquerade)));
        // Marks what is not local traffic (ClusterIP traffic jumps here).
        if (cluster_ip_masquerade(options_, family_) == ClusterIpMasquerade::kNotLocal) {
            Chain& outside = chain(m_.nat, kMasqOutsideChain);
            for (const LocalMatch& match : local_matches(options_, family_)) {
                outside.rules.push_back(local_match_rule(match, simple(TargetKind::kReturn)));
            }
            outside.rules.push_back(rule_to(jump(kMarkMasqChain)));
        }
    }

    // Appends the NodePort dispatch last in SWITCHBOARD-SERVICES (after every
    // ClusterIP and external address rule, as kube-proxy orders them).
    // Then, last in SWITCHBOARD-FILTER-SERVICES (after nat, in FORWARD and
    // OUTPUT), the rejection of what still heads for a cluster IP: no
    // service port of it matched (kube-proxy's nftables cluster-ips check).
    void finish() {
        if (auto r = loopback_return(options_, family_)) {
            chain(m_.nat, kServicesChain).rules.push_back(*r);
        }
        for (Rule r : nodeport_conditions(options_, family_)) {
            r.target = jump(kNodePortsChain);
            chain(m_.nat, kServicesChain).rules.push_back(r);
        }
        Chain& filter_services = chain(m_.filter, kFilterServicesChain);
        for (const IpAddress& ip : cluster_ips_) {
            Rule tcp = rule_to(simple(TargetKind::kRejectTcpReset));
            tcp.destination = host(ip);
            tcp.proto = IPPROTO_TCP;
            tcp.comment = ip.to_string() + " cluster IP, port not proxied";
            Rule other = tcp;
            other.proto = 0;
            other.target = simple(TargetKind::kRejectPortUnreachable);
            filter_services.rules.push_back(std::move(tcp));
            filter_services.rules.push_back(std::move(other));
        }
    }

    void service(const ServicePortPlan& port, const FamilyPolicy& policy) {
        const uint8_t proto = ip_protocol_number(port.protocol);
        const std::string id = port.id();
        const std::string svc = service_chain_name("SVC", port, hash_);
        const std::string svl = service_chain_name("SVL", port, hash_);
        const std::string ext = service_chain_name("EXT", port, hash_);
        const std::string fw = service_chain_name("FW", port, hash_);
        auto chain_of = [&](EndpointSet set) { return set == EndpointSet::kLocal ? svl : svc; };
        const TrafficRoute& internal = policy.cluster_ip_traffic;
        const TrafficRoute& external = policy.external_traffic;

        // Endpoint-choosing chains, when something jumps to them.
        for (const EndpointSet set : {EndpointSet::kCluster, EndpointSet::kLocal}) {
            const bool used = set == EndpointSet::kCluster ? policy.uses_cluster_endpoints
                                                           : policy.uses_local_endpoints;
            if (used) endpoint_chain(port, chain_of(set), policy, set, proto);
        }
        if (policy.reject_unknown_ports) cluster_ips_.insert(policy.cluster_ip);

        // No usable endpoints: nothing in nat rewrites the destination, so
        // the filter table sees the service address and refuses it.
        Chain& services = chain(m_.nat, kServicesChain);
        if (internal.has_endpoints) {
            services.rules.push_back(frontend(policy.cluster_ip, proto, port.port,
                                              id + " cluster IP",
                                              jump(chain_of(internal.endpoints))));
        } else {
            chain(m_.filter, kFilterServicesChain)
                .rules.push_back(frontend(policy.cluster_ip, proto, port.port,
                                          id + " has no endpoints",
                                          refusal_target(internal, proto)));
        }

        if (policy.external_entry) external_chain(ext, svc, policy, chain_of(external.endpoints));
        const Target refuse = refusal_target(external, proto);
        const std::string no_external = id + " has no external endpoints";
        Chain& filter_external = chain(m_.filter, kFilterExternalChain);
        for (const IpAddress& ip : policy.external_ips) {
            if (policy.external_entry) {
                services.rules.push_back(
                    frontend(ip, proto, port.port, id + " external IP", jump(ext)));
            }
            if (!external.has_endpoints) {
                filter_external.rules.push_back(
                    frontend(ip, proto, port.port, no_external, refuse));
            }
        }
        for (const IpAddress& ip : policy.load_balancer_ips) {
            if (policy.external_entry) {
                services.rules.push_back(frontend(ip, proto, port.port, id + " loadbalancer IP",
                                                  jump(policy.firewall ? fw : ext)));
            }
            if (policy.firewall) {
                // The source ranges come first, endpoints or not: allowed
                // sources meet the refusal here, after which every other
                // source (FW did not DNAT it) is dropped.
                Chain& firewall = chain(m_.filter, kFirewallChain);
                if (!external.has_endpoints) {
                    for (const Prefix& source : policy.allowed_sources) {
                        Rule r = frontend(ip, proto, port.port, no_external, refuse);
                        r.source = source;
                        firewall.rules.push_back(std::move(r));
                    }
                }
                firewall.rules.push_back(frontend(ip, proto, port.port,
                                                  id + " not allowed by loadBalancerSourceRanges",
                                                  simple(TargetKind::kDrop)));
            } else if (!external.has_endpoints) {
                filter_external.rules.push_back(
                    frontend(ip, proto, port.port, no_external, refuse));
            }
        }
        if (policy.firewall && policy.external_entry) {
            Chain& c = chain(m_.nat, fw);
            for (const Prefix& source : policy.allowed_sources) {
                Rule r = rule_to(jump(ext));
                r.source = source;
                c.rules.push_back(r);
            }
        }
        if (policy.has_node_port) {
            if (policy.external_entry) {
                Rule r = rule_to(jump(ext));
                r.proto = proto;
                r.dport = port.node_port;
                r.comment = id + " node port";
                chain(m_.nat, kNodePortsChain).rules.push_back(r);
            }
            if (!external.has_endpoints) {
                for (Rule r : nodeport_conditions(options_, family_)) {
                    r.proto = proto;
                    r.dport = port.node_port;
                    r.comment = no_external;
                    r.target = refuse;
                    filter_external.rules.push_back(r);
                }
            }
        }
    }

  private:
    static Chain& chain(Table& table, const std::string& name) {
        Chain& c = table.chains[name];
        c.name = name;
        return c;
    }

    static Target refusal_target(const TrafficRoute& route, uint8_t proto) {
        return route.refusal == Refusal::kReject ? reject_for(proto) : simple(TargetKind::kDrop);
    }

    // SVC / SVL: masquerade ClusterIP traffic as the policy says (when this
    // set serves ClusterIP traffic), then the ClientIP affinity checks, then
    // the statistic cascade: rule k matches 1/(n-k) of what reaches it, so
    // every endpoint gets 1/n.
    void endpoint_chain(const ServicePortPlan& port, const std::string& name,
                        const FamilyPolicy& policy, EndpointSet set, uint8_t proto) {
        Chain& c = chain(m_.nat, name);
        const std::vector<Endpoint>& eps = policy.endpoints(set);
        if (policy.cluster_ip_traffic.endpoints == set &&
            policy.cluster_ip_masquerade != ClusterIpMasquerade::kNone) {
            c.rules.push_back(
                frontend(policy.cluster_ip, proto, port.port, {},
                         jump(policy.cluster_ip_masquerade == ClusterIpMasquerade::kAll
                                  ? kMarkMasqChain
                                  : kMasqOutsideChain)));
        }
        const bool affinity = port.session_affinity.client_ip;
        const uint32_t seconds = port.session_affinity.timeout_seconds != 0
                                     ? port.session_affinity.timeout_seconds
                                     : kDefaultAffinitySeconds;
        std::vector<std::string> seps;
        for (const Endpoint& e : eps) seps.push_back(endpoint_chain_name(port, e, hash_));
        if (affinity) {
            for (const std::string& sep : seps) {
                Rule r = rule_to(jump(sep));
                r.recent = RecentKind::kCheck;
                r.recent_name = sep;
                r.recent_seconds = seconds;
                c.rules.push_back(r);
            }
        }
        const size_t n = eps.size();
        for (size_t k = 0; k < n; ++k) {
            Rule r = rule_to(jump(seps[k]));
            r.comment = fmt::format("{} -> {}", port.id(), eps[k].ip.to_string());
            if (k + 1 < n) r.probability_denominator = static_cast<uint32_t>(n - k);
            c.rules.push_back(r);
            endpoint(seps[k], eps[k], proto, affinity);
        }
    }

    // SEP: hairpin masquerade, then DNAT (recording the client for affinity).
    void endpoint(const std::string& name, const Endpoint& e, uint8_t proto, bool affinity) {
        Chain& c = chain(m_.nat, name);
        c.rules.clear();  // shared by SVC and SVL: same content either way
        Rule hairpin = rule_to(jump(kMarkMasqChain));
        hairpin.source = host(e.ip);
        c.rules.push_back(hairpin);
        Target dnat;
        dnat.kind = TargetKind::kDnat;
        dnat.address = e.ip;
        dnat.port = e.port;
        Rule r = rule_to(dnat);
        r.proto = proto;
        if (affinity) {
            r.recent = RecentKind::kSet;
            r.recent_name = name;
        }
        c.rules.push_back(r);
    }

    // EXT: Cluster policy masquerades everything; Local policy keeps the
    // client address but short-circuits local traffic and the node itself to
    // the cluster endpoints (the node's own traffic masqueraded so replies
    // return).
    void external_chain(const std::string& name, const std::string& cluster_chain,
                        const FamilyPolicy& policy, const std::string& external_policy_chain) {
        Chain& c = chain(m_.nat, name);
        if (policy.external_masquerade) {
            c.rules.push_back(rule_to(jump(kMarkMasqChain)));
        } else if (policy.short_circuit) {
            for (const LocalMatch& match : local_matches(options_, family_)) {
                c.rules.push_back(local_match_rule(match, jump(cluster_chain)));
            }
            Rule masq = rule_to(jump(kMarkMasqChain));
            masq.src_type_local = true;
            c.rules.push_back(masq);
            Rule local = rule_to(jump(cluster_chain));
            local.src_type_local = true;
            c.rules.push_back(local);
        }
        if (policy.external_traffic.has_endpoints) {
            c.rules.push_back(rule_to(jump(external_policy_chain)));
        }
    }

    FamilyModel& m_;
    const BackendOptions& options_;
    IpFamily family_;
    const ChainHash& hash_;
    std::set<IpAddress> cluster_ips_;  // rejected on unknown ports by finish()
};

}  // namespace

bool localhost_node_ports_effective(const BackendOptions& options) {
    if (!options.localhost_node_ports) return false;
    if (options.nodeport_addresses.empty()) return true;
    for (const Prefix& p : of_family(options.nodeport_addresses, IpFamily::kV4)) {
        if (p.contains(kIpv4Loopback.address()) || kIpv4Loopback.contains(p.address())) return true;
    }
    return false;
}

std::string service_chain_name(const char* kind, const ServicePortPlan& port,
                               const ChainHash& hash) {
    return std::string(kChainPrefix) + kind + "-" + hash(service_hash_input(port));
}

std::string endpoint_chain_name(const ServicePortPlan& port, const Endpoint& endpoint,
                                const ChainHash& hash) {
    return std::string(kChainPrefix) + "SEP-" + hash(endpoint_hash_input(port, endpoint));
}

RenderResult render(const Plan& plan, const BackendOptions& options, const ChainHash& hash) {
    RenderResult out;
    std::vector<const ServicePortPlan*> valid;
    for (const ServicePortPlan& port : plan.services) {
        if (Status s = validate_service(port); !s) {
            out.errors.push_back(s.error().message);
        } else {
            valid.push_back(&port);
        }
    }
    ChainNameCheck named = check_chain_names(valid, hash);
    out.errors.insert(out.errors.end(), named.errors.begin(), named.errors.end());
    out.chain_name_collisions = named.collisions;
    std::vector<ServicePolicy> policies;
    policies.reserve(named.ports.size());
    for (const ServicePortPlan* port : named.ports)
        policies.push_back(service_policy(*port, options));
    for (FamilyModel* m : {&out.model.v4, &out.model.v6}) {
        Renderer r(*m, options, hash);
        r.base();
        for (size_t i = 0; i < named.ports.size(); ++i) {
            for (const FamilyPolicy& policy : policies[i].families) {
                if (policy.family == m->family) r.service(*named.ports[i], policy);
            }
        }
        r.finish();
    }
    return out;
}

}  // namespace sb::rules::iptables
