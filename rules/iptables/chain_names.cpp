#include "rules/iptables/chain_names.h"

#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "rules/naming.h"

namespace sb::rules::iptables {

namespace {

// 12 base32 characters (60 bits): names stay within x_tables' 28 characters.
constexpr size_t kHashChars = 12;

// Drops the endpoints of `list` that are in `doomed`.
void drop(EndpointList& list, const std::set<std::pair<IpAddress, uint16_t>>& doomed) {
    std::vector<Endpoint> kept;
    std::copy_if(list.begin(), list.end(), std::back_inserter(kept), [&](const Endpoint& e) {
        return doomed.count({e.ip, e.port}) == 0;
    });
    list = std::move(kept);
}

}  // namespace

std::string default_chain_hash(std::string_view text) {
    return base32_hash(text, kHashChars);
}

std::string service_hash_input(const ServicePortPlan& port) {
    return port.id();
}

std::string endpoint_hash_input(const ServicePortPlan& port, const Endpoint& endpoint) {
    return port.id() + " " + endpoint.ip.to_string() + " " + std::to_string(endpoint.port);
}

ChainNameCheck check_chain_names(const std::vector<const ServicePortPlan*>& ports,
                                 const ChainHash& hash) {
    ChainNameCheck out;
    std::map<std::string, std::string> services;   // hash -> the port's input
    std::map<std::string, std::string> endpoints;  // hash -> the endpoint's input
    for (const ServicePortPlan* port : ports) {
        const std::string input = service_hash_input(*port);
        const auto [owner, fresh] = services.emplace(hash(input), input);
        if (!fresh && owner->second != input) {
            out.errors.push_back(fmt::format(
                "{}: its chain names (hash {}) collide with those of {}; the port is skipped",
                input, owner->first, owner->second));
            ++out.collisions;
            continue;
        }
        // Cluster and local lists share an endpoint's chain: one check each.
        std::set<std::pair<IpAddress, uint16_t>> seen;
        std::set<std::pair<IpAddress, uint16_t>> doomed;
        for (const auto* list : {&port->cluster_endpoints, &port->local_endpoints}) {
            for (const Endpoint& e : *list) {
                if (!seen.emplace(e.ip, e.port).second) continue;
                const std::string key = endpoint_hash_input(*port, e);
                const auto [other, added] = endpoints.emplace(hash(key), key);
                if (added || other->second == key) continue;
                out.errors.push_back(
                    fmt::format("{}: endpoint {} port {}: its chain name (hash {}) collides with "
                                "that of {}; the endpoint is skipped",
                                input, e.ip, e.port, other->first, other->second));
                ++out.collisions;
                doomed.emplace(e.ip, e.port);
            }
        }
        if (doomed.empty()) {
            out.ports.push_back(port);
            continue;
        }
        ServicePortPlan& copy = out.trimmed.emplace_back(*port);
        drop(copy.cluster_endpoints, doomed);
        drop(copy.local_endpoints, doomed);
        out.ports.push_back(&copy);
    }
    return out;
}

}  // namespace sb::rules::iptables
