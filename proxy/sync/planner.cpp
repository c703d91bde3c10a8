#include "proxy/sync/planner.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>

namespace sb::proxy {

namespace {

using watch::ServiceType;

rules::TrafficPolicy to_rules(watch::TrafficPolicy policy) {
    return policy == watch::TrafficPolicy::kLocal ? rules::TrafficPolicy::kLocal
                                                  : rules::TrafficPolicy::kCluster;
}

// apiservice.ExternallyAccessible: reachable other than by a cluster IP.
bool externally_accessible(const watch::Service& service) {
    return service.type == ServiceType::kNodePort || service.type == ServiceType::kLoadBalancer ||
           !service.external_ips.empty();
}

struct Families {
    bool v4 = false;
    bool v6 = false;
    bool has(IpFamily family) const { return family == IpFamily::kV4 ? v4 : v6; }
};

Families families_of(const std::vector<IpAddress>& cluster_ips) {
    Families families;
    for (const auto& ip : cluster_ips) (ip.is_v4() ? families.v4 : families.v6) = true;
    return families;
}

template <typename T, typename FamilyOf>
std::vector<T> of_families(const std::vector<T>& values, const Families& families,
                           FamilyOf family_of) {
    std::vector<T> kept;
    for (const auto& value : values) {
        if (families.has(family_of(value))) kept.push_back(value);
    }
    return kept;
}

// The identity, addresses and policies of one service port: everything but
// the endpoints. Fields that only a type uses are left empty for the others
// (docs/planner.md, "Identity and type-specific fields").
rules::ServicePortPlan describe_port(const watch::Service& service, const watch::ServicePort& port,
                                     const std::vector<IpAddress>& cluster_ips,
                                     const Families& families) {
    auto address_family = [](const IpAddress& ip) { return ip.family(); };
    rules::ServicePortPlan plan;
    plan.ns = service.meta.ns;
    plan.service = service.meta.name;
    plan.port_name = port.name;
    plan.protocol = port.protocol;
    plan.cluster_ips = cluster_ips;
    plan.port = port.port;
    const bool load_balancer = service.type == ServiceType::kLoadBalancer;
    if (load_balancer || service.type == ServiceType::kNodePort) plan.node_port = port.node_port;
    plan.external_ips = of_families(service.external_ips, families, address_family);
    if (load_balancer) {
        for (const auto& ingress : service.load_balancer_ingress) {
            if (!ingress.ip || ingress.ip_mode_proxy || !families.has(ingress.ip->family())) {
                continue;
            }
            plan.load_balancer_ips.push_back(*ingress.ip);
        }
        plan.load_balancer_source_ranges =
            of_families(service.load_balancer_source_ranges, families,
                        [](const Prefix& prefix) { return prefix.family(); });
    }
    const bool external_local = externally_accessible(service) &&
                                service.external_traffic_policy == watch::TrafficPolicy::kLocal;
    plan.external_traffic_policy =
        external_local ? rules::TrafficPolicy::kLocal : rules::TrafficPolicy::kCluster;
    plan.internal_traffic_policy = to_rules(service.internal_traffic_policy);
    if (load_balancer && external_local) {
        plan.health_check_node_port = service.health_check_node_port;
    }
    if (service.session_affinity == watch::SessionAffinity::kClientIP) {
        plan.session_affinity.client_ip = true;
        plan.session_affinity.timeout_seconds =
            service.affinity_timeout_seconds > 0
                ? static_cast<uint32_t>(service.affinity_timeout_seconds)
                : static_cast<uint32_t>(watch::kDefaultAffinityTimeoutSeconds);
    }
    // An annotation naming no scheduler is ignored, as kube-proxy ignores
    // annotations it does not know.
    if (auto it = service.meta.annotations.find(rules::kIpvsSchedulerAnnotation);
        it != service.meta.annotations.end() && rules::is_ipvs_scheduler(it->second)) {
        plan.ipvs_scheduler = it->second;
    }
    return plan;
}

// An endpoint of one service port with the slice hints it came with (the
// Plan does not carry hints; only the topology choice needs them).
struct Candidate {
    rules::Endpoint endpoint;
    const std::vector<std::string>* zone_hints = nullptr;
    const std::vector<std::string>* node_hints = nullptr;
};

// Of two endpoints with the same address and port (in different slices, or
// listed twice), the one to keep: ready first, then serving, then local.
int preference(const rules::Endpoint& endpoint) {
    return (endpoint.ready ? 4 : 0) + (endpoint.serving ? 2 : 0) + (endpoint.is_local ? 1 : 0);
}

// Every endpoint of the service port over all usable slices, once per
// (ip, port), sorted by ip then port. `slices` must be in a fixed order
// (by name) so that ties between duplicates resolve the same way each time.
std::vector<Candidate> merge_endpoints(const watch::ServicePort& port,
                                       const std::vector<const watch::EndpointSlice*>& slices,
                                       const Families& families, const std::string& node_name) {
    std::map<std::pair<IpAddress, uint16_t>, Candidate> merged;
    for (const auto* slice : slices) {
        // The slice port carrying the service port's name and protocol; its
        // number is the target port as resolved for this slice's pods.
        auto slice_port = std::find_if(
            slice->ports.begin(), slice->ports.end(), [&](const watch::EndpointPort& candidate) {
                return candidate.name == port.name && candidate.protocol == port.protocol;
            });
        if (slice_port == slice->ports.end() || !slice_port->port) continue;
        for (const auto& endpoint : slice->endpoints) {
            // As kube-proxy: the first address is the endpoint's address.
            if (endpoint.addresses.empty()) continue;
            const IpAddress& ip = endpoint.addresses.front();
            if (!families.has(ip.family())) continue;
            Candidate candidate;
            candidate.endpoint.ip = ip;
            candidate.endpoint.port = *slice_port->port;
            candidate.endpoint.ready = endpoint.ready;
            candidate.endpoint.serving = endpoint.serving;
            candidate.endpoint.terminating = endpoint.terminating;
            candidate.endpoint.node_name = endpoint.node_name;
            candidate.endpoint.zone = endpoint.zone;
            candidate.endpoint.is_local = !node_name.empty() && endpoint.node_name == node_name;
            static const std::vector<std::string> kNoHints;
            candidate.zone_hints = endpoint.hints ? &endpoint.hints->for_zones : &kNoHints;
            candidate.node_hints = endpoint.hints ? &endpoint.hints->for_nodes : &kNoHints;
            auto [it, inserted] = merged.try_emplace({ip, candidate.endpoint.port}, candidate);
            if (!inserted && preference(candidate.endpoint) > preference(it->second.endpoint)) {
                it->second = std::move(candidate);
            }
        }
    }
    std::vector<Candidate> candidates;
    candidates.reserve(merged.size());
    for (auto& entry : merged) candidates.push_back(std::move(entry.second));
    return candidates;
}

bool contains(const std::vector<std::string>* values, const std::string& value) {
    return !value.empty() && std::find(values->begin(), values->end(), value) != values->end();
}

enum class TopologyMode { kNone, kPreferSameZone, kPreferSameNode };

// kube-proxy's topologyModeFromHints, over the ready endpoints.
TopologyMode topology_mode(const std::vector<Candidate>& candidates, const std::string& node_name,
                           const std::string& zone) {
    bool any_ready = false;
    bool all_node_hints = true;
    bool hint_for_node = false;
    bool all_zone_hints = true;
    bool hint_for_zone = false;
    for (const auto& candidate : candidates) {
        if (!candidate.endpoint.ready) continue;
        any_ready = true;
        if (candidate.node_hints->empty()) {
            all_node_hints = false;
        } else if (contains(candidate.node_hints, node_name)) {
            hint_for_node = true;
        }
        if (candidate.zone_hints->empty()) {
            all_zone_hints = false;
        } else if (contains(candidate.zone_hints, zone)) {
            hint_for_zone = true;
        }
    }
    if (!any_ready) return TopologyMode::kNone;
    if (all_node_hints && hint_for_node) return TopologyMode::kPreferSameNode;
    if (all_zone_hints && hint_for_zone) return TopologyMode::kPreferSameZone;
    return TopologyMode::kNone;
}

// Ready endpoints (those of them `in_topology` accepts), else the serving
// and terminating ones, else none: kube-proxy's CategorizeEndpoints, for the
// endpoints on this node only when `local_only`.
// The list is allocated at its exact size: a plan holds two per service port
// for as long as it lives (push_back's doubling left a third of 15 MB unused
// at 10k Services x 10 endpoints).
template <typename InTopology>
std::vector<rules::Endpoint> usable(const std::vector<Candidate>& candidates, bool local_only,
                                    InTopology in_topology) {
    const auto ready = [&](const Candidate& candidate) {
        const rules::Endpoint& endpoint = candidate.endpoint;
        return endpoint.ready && (!local_only || endpoint.is_local) && in_topology(candidate);
    };
    // No topology here: a topology mode is only chosen when a ready endpoint
    // for this node or zone exists, so the fallback means none is ready.
    const auto terminating = [&](const Candidate& candidate) {
        const rules::Endpoint& endpoint = candidate.endpoint;
        return endpoint.serving && endpoint.terminating && (!local_only || endpoint.is_local);
    };
    const auto take = [&](const auto& chosen_by) {
        std::vector<rules::Endpoint> chosen;
        chosen.reserve(
            static_cast<size_t>(std::count_if(candidates.begin(), candidates.end(), chosen_by)));
        for (const auto& candidate : candidates) {
            if (chosen_by(candidate)) chosen.push_back(candidate.endpoint);
        }
        return chosen;
    };
    std::vector<rules::Endpoint> chosen = take(ready);
    return chosen.empty() ? take(terminating) : chosen;
}

// The serving endpoints that neither chosen list holds (kube-proxy's
// IsServing, whatever the topology and traffic policies), for the UDP flows
// they still have. The lists are sorted by ip, port, as the candidates are.
std::vector<rules::Endpoint> other_serving(const std::vector<Candidate>& candidates,
                                           const rules::EndpointList& cluster,
                                           const rules::EndpointList& local) {
    const auto in = [](const rules::EndpointList& list, const rules::Endpoint& e) {
        return std::binary_search(list.begin(), list.end(), e,
                                  [](const rules::Endpoint& a, const rules::Endpoint& b) {
                                      return std::tie(a.ip, a.port) < std::tie(b.ip, b.port);
                                  });
    };
    const auto other = [&](const Candidate& candidate) {
        const rules::Endpoint& e = candidate.endpoint;
        return e.serving && !in(cluster, e) && !in(local, e);
    };
    std::vector<rules::Endpoint> out;
    out.reserve(static_cast<size_t>(std::count_if(candidates.begin(), candidates.end(), other)));
    for (const auto& candidate : candidates) {
        if (other(candidate)) out.push_back(candidate.endpoint);
    }
    return out;
}

bool protocol_name_less(rules::Protocol a, rules::Protocol b) {
    return std::string_view(rules::to_string(a)) < std::string_view(rules::to_string(b));
}

// Namespace, service, port name, then protocol by its name.
bool service_port_less(const rules::ServicePortPlan& a, const rules::ServicePortPlan& b) {
    if (a.ns != b.ns) return a.ns < b.ns;
    if (a.service != b.service) return a.service < b.service;
    if (a.port_name != b.port_name) return a.port_name < b.port_name;
    return protocol_name_less(a.protocol, b.protocol);
}

bool slice_usable(const watch::EndpointSlice& slice, const watch::Service& service) {
    if (slice.address_type == watch::AddressType::kFQDN) return false;
    if (slice.meta.ns != service.meta.ns || slice.service_name != service.meta.name) return false;
    return !watch::left_to_another_proxy(slice.meta);
}

}  // namespace

std::vector<rules::ServicePortPlan> plan_service(
    const watch::Service& service,
    const std::vector<std::shared_ptr<const watch::EndpointSlice>>& slices, const watch::Node* node,
    const PlannerOptions& options) {
    std::vector<rules::ServicePortPlan> plans;
    if (!watch::proxied_by_default_proxy(service)) return plans;
    // docs/dns.md, "Node-local addresses": the node answers these itself.
    std::vector<IpAddress> cluster_ips;
    for (const IpAddress& ip : service.cluster_ips) {
        const auto& local = options.local_dns_addresses;
        if (std::find(local.begin(), local.end(), ip) == local.end()) cluster_ips.push_back(ip);
    }
    if (cluster_ips.empty()) return plans;

    std::vector<const watch::EndpointSlice*> usable_slices;
    for (const auto& slice : slices) {
        if (slice && slice_usable(*slice, service)) usable_slices.push_back(slice.get());
    }
    std::sort(usable_slices.begin(), usable_slices.end(),
              [](const watch::EndpointSlice* a, const watch::EndpointSlice* b) {
                  return a->meta.name < b->meta.name;
              });

    const Families families = families_of(service.cluster_ips);
    const std::string zone = node ? node->zone() : std::string();
    for (const auto& port : service.ports) {
        rules::ServicePortPlan plan = describe_port(service, port, cluster_ips, families);
        const std::vector<Candidate> candidates =
            merge_endpoints(port, usable_slices, families, options.node_name);
        const TopologyMode mode = topology_mode(candidates, options.node_name, zone);
        plan.cluster_endpoints = usable(candidates, false, [&](const Candidate& candidate) {
            switch (mode) {
                case TopologyMode::kNone:
                    return true;
                case TopologyMode::kPreferSameNode:
                    return contains(candidate.node_hints, options.node_name);
                case TopologyMode::kPreferSameZone:
                    return contains(candidate.zone_hints, zone);
            }
            return true;
        });
        plan.local_endpoints = usable(candidates, true, [](const Candidate&) { return true; });
        // Every endpoint on this node: one block for both (rules::EndpointList).
        if (plan.local_endpoints == plan.cluster_endpoints) {
            plan.local_endpoints = plan.cluster_endpoints;
        }
        plan.other_serving_endpoints =
            other_serving(candidates, plan.cluster_endpoints, plan.local_endpoints);
        plans.push_back(std::move(plan));
    }
    std::sort(plans.begin(), plans.end(), service_port_less);
    return plans;
}

std::vector<Prefix> service_cidrs_of(const watch::Snapshot& snapshot) {
    std::vector<Prefix> out;
    for (const auto& [key, cidr] : snapshot.service_cidrs()) {
        out.insert(out.end(), cidr->cidrs.begin(), cidr->cidrs.end());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

rules::Plan build_plan(const watch::Snapshot& snapshot, const PlannerOptions& options,
                       const rules::Plan* reuse) {
    rules::Plan plan;
    plan.node = options.node_name;
    plan.service_cidrs = service_cidrs_of(snapshot);
    plan.revision = rules::next_plan_revision();

    const watch::Node* node = snapshot.node(options.node_name);
    // A cursor over reuse's ports, which are in the same order as the ports
    // made here (a plan made by hand may not be: then nothing is reused
    // past the disorder, which costs memory, never correctness).
    rules::ServicePorts::const_iterator reused, reused_end;
    if (reuse) {
        reused = reuse->services.begin();
        reused_end = reuse->services.end();
    }
    for (const auto& [key, entry] : snapshot.services()) {
        if (!entry->service) continue;  // slices without their Service plan nothing
        auto ports = plan_service(*entry->service, entry->slices, node, options);
        for (auto& port : ports) {
            while (reused != reused_end && service_port_less(*reused, port)) ++reused;
            if (reused != reused_end && *reused == port) {
                plan.services.push_back(reused.entry());
            } else {
                plan.services.push_back(std::move(port));
            }
        }
    }
    // Sorted already: the snapshot's index orders Services by (namespace,
    // name) and plan_service sorts each one's ports.
    return plan;
}

}  // namespace sb::proxy
