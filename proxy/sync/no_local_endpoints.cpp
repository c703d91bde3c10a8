#include "proxy/sync/no_local_endpoints.h"

#include <algorithm>

namespace sb::proxy {

void NoLocalEndpointCounts::reset(const rules::Plan& plan) {
    internal_ = {};
    external_ = {};
    for (const auto& port : plan.services) count(port, +1);
}

void NoLocalEndpointCounts::apply(const std::vector<rules::PortChange>& changes) {
    for (const auto& [before, after] : changes) {
        if (before) count(*before, -1);
        if (after) count(*after, +1);
    }
}

void NoLocalEndpointCounts::count(const rules::ServicePortPlan& port, int sign) {
    const bool internal_local = port.internal_traffic_policy == rules::TrafficPolicy::kLocal;
    const bool external_local = port.external_traffic_policy == rules::TrafficPolicy::kLocal;
    if (!internal_local && !external_local) return;
    for (IpFamily family : kIpFamilies) {
        auto of_family = [family](const IpAddress& ip) { return ip.family() == family; };
        if (std::none_of(port.cluster_ips.begin(), port.cluster_ips.end(), of_family)) continue;
        const bool has_local =
            std::any_of(port.local_endpoints.begin(), port.local_endpoints.end(),
                        [&](const rules::Endpoint& endpoint) { return of_family(endpoint.ip); });
        if (has_local) continue;
        // Unsigned wrap-around cancels out: every -1 follows the +1 of the
        // same port in an earlier plan.
        const auto step = static_cast<uint64_t>(static_cast<int64_t>(sign));
        if (internal_local) internal_[index(family)] += step;
        if (external_local) external_[index(family)] += step;
    }
}

}  // namespace sb::proxy
