#include "rules/nftables/affinity_cleanup.h"

#include <algorithm>
#include <set>
#include <utility>

#include "base/log.h"
#include "rules/nftables/render.h"

namespace sb::rules::nftables {

namespace {

using EndpointSet = std::set<std::pair<IpAddress, uint16_t>>;

bool serves(const ServicePortPlan& port, const Endpoint& e) {
    const auto same = [&](const Endpoint& x) { return x.ip == e.ip && x.port == e.port; };
    return std::any_of(port.cluster_endpoints.begin(), port.cluster_endpoints.end(), same) ||
           std::any_of(port.local_endpoints.begin(), port.local_endpoints.end(), same);
}

// The endpoints of `family` that left an affinity service port.
EndpointSet departed(const std::vector<PortChange>& changed, IpFamily family) {
    EndpointSet out;
    for (const auto& [old, now] : changed) {
        if (!old || !old->session_affinity.client_ip) continue;
        for (const auto* list : {&old->cluster_endpoints, &old->local_endpoints}) {
            for (const Endpoint& e : *list) {
                if (e.ip.family() != family) continue;
                if (now && now->session_affinity.client_ip && serves(*now, e)) continue;
                out.emplace(e.ip, e.port);
            }
        }
    }
    return out;
}

Status delete_entries(Channel& channel, IpFamily family, const EndpointSet& endpoints) {
    Model map;
    Set& set = map.sets[affinity_map(family)];
    set.name = affinity_map(family);
    set.layout = SetLayout::kAffinity;
    set.family = family;
    auto entries = channel.dump_elements(set);
    if (!entries) return entries.error();
    Delta delta;
    for (const auto& [key, value] : *entries) {
        if (endpoints.count({value.address, value.port})) {
            delta.del_elements.emplace_back(set.name, key);
        }
    }
    if (delta.del_elements.empty()) return {};
    return channel.apply(delta, map);
}

}  // namespace

void clean_affinity(Channel& channel, const std::vector<PortChange>& changed) {
    for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        const EndpointSet endpoints = departed(changed, family);
        if (endpoints.empty()) continue;
        if (Status s = delete_entries(channel, family, endpoints); !s) {
            log::warn("nftables: affinity cleanup failed: {}", s.error().describe());
        }
    }
}

}  // namespace sb::rules::nftables
