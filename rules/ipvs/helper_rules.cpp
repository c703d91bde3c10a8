#include "rules/ipvs/helper_rules.h"

#include <netinet/in.h>

#include <algorithm>
#include <optional>

#include "rules/local_traffic.h"
#include "rules/nftables/render.h"
#include "rules/service_policy.h"
#include "rules/validate.h"

namespace sb::rules::ipvs {

namespace {

using nftables::Chain;
using nftables::ElementKey;
using nftables::Hook;
using nftables::kEndpointsCheck;
using nftables::kFilterInput;
using nftables::kFilterOutput;
using nftables::kFirewallCheck;
using nftables::kMasquerading;
using nftables::kNatOutput;
using nftables::kNatPostrouting;
using nftables::kNatPrerouting;
using nftables::kNodeportEndpointsCheck;
using nftables::Model;
using nftables::Rule;
using nftables::Set;
using nftables::SetLayout;
using nftables::Verdict;
using nftables::VerdictKind;

constexpr IpFamily kFamilies[] = {IpFamily::kV4, IpFamily::kV6};

// The chains with a job of the nftables backend's table take its names
// (rules/nftables/render.h), so the two read alike; this one is the helper
// table's own.
const char* kUnknownPortsCheck = "unknown-ports-check";

std::string proxied_map(IpFamily family) {
    return family == IpFamily::kV4 ? "proxied4" : "proxied6";
}

const Verdict kMarkForMasquerade{VerdictKind::kGoto, nftables::kMarkForMasqueradeChain, {}, 0};
const Verdict kReject{VerdictKind::kGoto, nftables::kRejectChain, {}, 0};
const Verdict kDrop{VerdictKind::kDrop, {}, {}, 0};
const Verdict kAccept{VerdictKind::kAccept, {}, {}, 0};

Chain& add_chain(Model& model, const std::string& name, std::optional<Hook> hook = std::nullopt) {
    Chain& chain = model.chains[name];
    chain.name = name;
    chain.hook = std::move(hook);
    return chain;
}

void add_set(Model& model, const std::string& name, SetLayout layout, IpFamily family) {
    Set& set = model.sets[name];
    set.name = name;
    set.layout = layout;
    set.family = family;
}

void add_element(nftables::Fragment& fragment, const std::string& set, const ElementKey& key,
                 const Verdict& value = {}) {
    fragment.elements.push_back(nftables::ElementRef{set, key, value});
}

}  // namespace

std::string service_ips_set(IpFamily family) {
    return family == IpFamily::kV4 ? "service-ips4" : "service-ips6";
}

Model render_helper_base(const BackendOptions& options) {
    using namespace nftables;
    Model model;
    model.table = kHelperTable;
    for (const char* name : {kFilterInput, kFilterOutput}) {
        const bool input = name == kFilterInput;
        Chain& chain = add_chain(model, name, Hook{"filter", input ? "input" : "output", -110});
        for (const char* check :
             {kFirewallCheck, kEndpointsCheck, kNodeportEndpointsCheck, kUnknownPortsCheck}) {
            chain.rules.push_back({ct_state_new(), verdict(VerdictKind::kJump, check)});
        }
    }
    add_chain(model, kNatPrerouting, Hook{"nat", "prerouting", -100})
        .rules.push_back({verdict(VerdictKind::kJump, kServicesChain)});
    add_chain(model, kNatOutput, Hook{"nat", "output", -100})
        .rules.push_back({verdict(VerdictKind::kJump, kServicesChain)});
    add_chain(model, kNatPostrouting, Hook{"nat", "postrouting", 100})
        .rules.push_back({verdict(VerdictKind::kJump, kMasquerading)});

    Chain& firewall = add_chain(model, kFirewallCheck);
    Chain& endpoints = add_chain(model, kEndpointsCheck);
    Chain& nodeport_endpoints = add_chain(model, kNodeportEndpointsCheck);
    Chain& unknown_ports = add_chain(model, kUnknownPortsCheck);
    Chain& services = add_chain(model, kServicesChain);
    Chain& masquerading = add_chain(model, kMasquerading);
    for (IpFamily f : kFamilies) {
        firewall.rules.push_back({nfproto(f), vmap_daddr_proto_port(f, firewall_map(f))});
        endpoints.rules.push_back({nfproto(f), vmap_daddr_proto_port(f, no_endpoints_map(f))});
        unknown_ports.rules.push_back({nfproto(f), vmap_daddr_proto_port(f, proxied_map(f))});
        unknown_ports.rules.push_back({nfproto(f), set_daddr(f, service_ips_set(f)),
                                       verdict(VerdictKind::kGoto, kRejectChain)});
        services.rules.push_back({nfproto(f), vmap_daddr_proto_port(f, services_map(f))});
        for (Rule condition : nodeport_address_conditions(options, f)) {
            Rule check = condition;
            check.push_back(vmap_proto_port(no_endpoint_nodeports_map(f)));
            nodeport_endpoints.rules.push_back(std::move(check));
            condition.push_back(vmap_proto_port(nodeports_map(f)));
            services.rules.push_back(std::move(condition));
        }
        // Hairpin: an endpoint that reached itself through a Service would
        // answer itself directly and drop the reply. IPVS leaves no `ct
        // status dnat` to test, and a Pod's packet to its own address never
        // leaves its namespace, so the address pair alone tells.
        masquerading.rules.push_back(
            {nfproto(f), set_saddr_daddr(f, hairpin_set(f)), masquerade()});
    }
    const uint32_t mark = options.masquerade_mark;
    masquerading.rules.push_back({mark_unset(mark), verdict(VerdictKind::kReturn)});
    masquerading.rules.push_back({mark_set_xor(mark)});
    masquerading.rules.push_back({masquerade()});

    Chain& reject = add_chain(model, kRejectChain);
    reject.rules.push_back({l4proto(IPPROTO_TCP), reject_tcp_reset()});
    reject.rules.push_back({reject_port_unreachable()});
    add_chain(model, kMarkForMasqueradeChain).rules.push_back({mark_set_or(mark)});
    for (IpFamily f : kFamilies) {
        if (cluster_ip_masquerade(options, f) != ClusterIpMasquerade::kNotLocal) continue;
        Chain& chain = add_chain(model, masq_outside_chain(f));
        for (const LocalMatch& match : local_matches(options, f)) {
            Rule rule = local_match_rule(match, f);
            rule.push_back(verdict(VerdictKind::kReturn));
            chain.rules.push_back(std::move(rule));
        }
        chain.rules.push_back({mark_set_or(mark)});
    }

    for (IpFamily f : kFamilies) {
        add_set(model, services_map(f), SetLayout::kAddrProtoPortVerdict, f);
        add_set(model, nodeports_map(f), SetLayout::kProtoPortVerdict, f);
        add_set(model, no_endpoints_map(f), SetLayout::kAddrProtoPortVerdict, f);
        add_set(model, no_endpoint_nodeports_map(f), SetLayout::kProtoPortVerdict, f);
        add_set(model, firewall_map(f), SetLayout::kAddrProtoPortVerdict, f);
        add_set(model, proxied_map(f), SetLayout::kAddrProtoPortVerdict, f);
        add_set(model, hairpin_set(f), SetLayout::kAddrAddr, f);
        add_set(model, service_ips_set(f), SetLayout::kAddr, f);
    }
    return model;
}

namespace {

const Verdict& refusal(const TrafficRoute& route) {
    return route.refusal == Refusal::kReject ? kReject : kDrop;
}

// What one family of one service port adds: elements, and a firewall chain
// when it has loadBalancerSourceRanges.
void add_family(nftables::Fragment& model, const ServicePortPlan& port,
                const FamilyPolicy& policy) {
    using namespace nftables;
    const IpFamily f = policy.family;
    const uint8_t proto = ip_protocol_number(port.protocol);
    const ElementKey cluster_key{policy.cluster_ip, {}, proto, port.port};

    add_element(model, proxied_map(f), cluster_key, kAccept);
    switch (policy.cluster_ip_masquerade) {
        case ClusterIpMasquerade::kAll:
            add_element(model, services_map(f), cluster_key, kMarkForMasquerade);
            break;
        case ClusterIpMasquerade::kNotLocal:
            add_element(model, services_map(f), cluster_key,
                        Verdict{VerdictKind::kGoto, masq_outside_chain(f), {}, 0});
            break;
        case ClusterIpMasquerade::kNone:
            break;
    }
    if (!policy.cluster_ip_traffic.has_endpoints) {
        add_element(model, no_endpoints_map(f), cluster_key, refusal(policy.cluster_ip_traffic));
    }

    for (const auto* list : {&policy.external_ips, &policy.load_balancer_ips}) {
        for (const IpAddress& ip : *list) {
            const ElementKey key{ip, {}, proto, port.port};
            add_element(model, proxied_map(f), key, kAccept);
            if (policy.external_masquerade) {
                add_element(model, services_map(f), key, kMarkForMasquerade);
            }
            if (!policy.external_traffic.has_endpoints) {
                add_element(model, no_endpoints_map(f), key, refusal(policy.external_traffic));
            }
        }
    }
    if (policy.has_node_port) {
        const ElementKey key{{}, {}, proto, port.node_port};
        if (policy.external_masquerade) {
            add_element(model, nodeports_map(f), key, kMarkForMasquerade);
        }
        if (!policy.external_traffic.has_endpoints) {
            add_element(model, no_endpoint_nodeports_map(f), key, refusal(policy.external_traffic));
        }
    }

    if (policy.firewall) {
        const std::string name = service_chain_name("fw", f, port);
        Chain chain;
        chain.name = name;
        for (const Prefix& source : policy.allowed_sources) {
            chain.rules.push_back({nfproto(f), saddr(source), verdict(VerdictKind::kReturn)});
        }
        chain.rules.push_back({verdict(VerdictKind::kDrop)});
        model.chains.push_back(std::move(chain));
        for (const IpAddress& ip : policy.load_balancer_ips) {
            add_element(model, firewall_map(f), ElementKey{ip, {}, proto, port.port},
                        Verdict{VerdictKind::kGoto, name, {}, 0});
        }
    }

    for (const EndpointSet set : {EndpointSet::kCluster, EndpointSet::kLocal}) {
        const bool used = set == EndpointSet::kCluster ? policy.uses_cluster_endpoints
                                                       : policy.uses_local_endpoints;
        if (!used) continue;
        for (const Endpoint& endpoint : policy.endpoints(set)) {
            add_element(model, hairpin_set(f), ElementKey{endpoint.ip, endpoint.ip, 0, 0});
        }
    }
}

}  // namespace

nftables::Fragment render_helper_port(const ServicePortPlan& port, const BackendOptions& options) {
    nftables::Fragment fragment;
    for (const FamilyPolicy& policy : service_policy(port, options).families) {
        add_family(fragment, port, policy);
    }
    return fragment;
}

nftables::Model render_helper_rules(const Plan& plan, const BackendOptions& options,
                                    const std::vector<IpAddress>& service_addresses) {
    Model model = render_helper_base(options);
    for (const ServicePortPlan& port : plan.services) {
        if (!validate_service(port)) continue;
        nftables::add_fragment(model, render_helper_port(port, options));
    }
    for (const IpAddress& address : service_addresses) {
        model.sets.at(service_ips_set(address.family()))
            .elements.emplace(ElementKey{address, {}, 0, 0}, Verdict{});
    }
    for (auto& [_, set] : model.sets) set.elements.compact();
    return model;
}

}  // namespace sb::rules::ipvs
