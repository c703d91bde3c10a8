#include "rules/port_changes.h"

#include <algorithm>
#include <tuple>

namespace sb::rules {

namespace {

auto order_key(const ServicePortPlan& p) {
    return std::tie(p.ns, p.service, p.port_name, p.protocol);
}

// The indexes [first, last) of two plans' service ports to compare.
struct Range {
    size_t first = 0;
    size_t last = 0;
};

// One merge walk over two sorted ranges; false when either breaks the order.
bool merge_changes(const ServicePorts& a, Range ra, const ServicePorts& b, Range rb,
                   std::vector<PortChange>& out) {
    size_t i = ra.first, j = rb.first;
    // Every step advances past an element; it must not be below its predecessor.
    auto ordered = [](const ServicePorts& v, size_t k, size_t first) {
        return k == first || !(order_key(v[k]) < order_key(v[k - 1]));
    };
    while (i < ra.last || j < rb.last) {
        if ((i < ra.last && !ordered(a, i, ra.first)) ||
            (j < rb.last && !ordered(b, j, rb.first))) {
            return false;
        }
        if (j == rb.last || (i < ra.last && order_key(a[i]) < order_key(b[j]))) {
            out.emplace_back(&a[i++], nullptr);
        } else if (i == ra.last || order_key(b[j]) < order_key(a[i])) {
            out.emplace_back(nullptr, &b[j++]);
        } else {
            if (a.entry(i) != b.entry(j) && !(a[i] == b[j])) out.emplace_back(&a[i], &b[j]);
            ++i;
            ++j;
        }
    }
    return true;
}

// The ports of Service (ns, name) in a sorted plan, by binary search.
Range service_range(const ServicePorts& ports, const std::pair<std::string, std::string>& service) {
    auto key = [](const ServicePortPlan& p) { return std::tie(p.ns, p.service); };
    const auto wanted = std::tie(service.first, service.second);
    auto first = std::partition_point(ports.begin(), ports.end(),
                                      [&](const ServicePortPlan& p) { return key(p) < wanted; });
    auto last = std::partition_point(first, ports.end(),
                                     [&](const ServicePortPlan& p) { return !(wanted < key(p)); });
    return {static_cast<size_t>(first - ports.begin()), static_cast<size_t>(last - ports.begin())};
}

}  // namespace

std::optional<std::vector<PortChange>> changed_ports(const Plan& previous, const Plan& plan) {
    std::vector<PortChange> out;
    if (plan.changes && previous.revision != 0 &&
        plan.changes->base_revision == previous.revision) {
        // Only the Services the change set names can differ; each one's
        // ports are found by binary search (the planner keeps both sorted).
        for (const auto& service : plan.changes->services) {
            if (!merge_changes(previous.services, service_range(previous.services, service),
                               plan.services, service_range(plan.services, service), out)) {
                return std::nullopt;
            }
        }
        return out;
    }
    if (!merge_changes(previous.services, {0, previous.services.size()}, plan.services,
                       {0, plan.services.size()}, out)) {
        return std::nullopt;
    }
    return out;
}

}  // namespace sb::rules
