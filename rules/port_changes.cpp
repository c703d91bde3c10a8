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
// Iterators, not indexes: a walk finds each chunk of the plans once.
bool merge_changes(const ServicePorts& a, Range ra, const ServicePorts& b, Range rb,
                   std::vector<PortChange>& out) {
    using Offset = ServicePorts::const_iterator::difference_type;
    auto i = a.begin() + static_cast<Offset>(ra.first);
    auto j = b.begin() + static_cast<Offset>(rb.first);
    const auto i_end = a.begin() + static_cast<Offset>(ra.last);
    const auto j_end = b.begin() + static_cast<Offset>(rb.last);
    // Every step advances past an element; it must not be below its predecessor.
    const ServicePortPlan* i_before = nullptr;
    const ServicePortPlan* j_before = nullptr;
    auto ordered = [](const ServicePortPlan* before, const ServicePortPlan& p) {
        return before == nullptr || !(order_key(p) < order_key(*before));
    };
    while (i != i_end || j != j_end) {
        const ServicePortPlan* x = i != i_end ? &*i : nullptr;
        const ServicePortPlan* y = j != j_end ? &*j : nullptr;
        if ((x && !ordered(i_before, *x)) || (y && !ordered(j_before, *y))) return false;
        if (!y || (x && order_key(*x) < order_key(*y))) {
            out.emplace_back(x, nullptr);
            i_before = x;
            ++i;
        } else if (!x || order_key(*y) < order_key(*x)) {
            out.emplace_back(nullptr, y);
            j_before = y;
            ++j;
        } else {
            if (i.entry() != j.entry() && !(*x == *y)) out.emplace_back(x, y);
            i_before = x;
            j_before = y;
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
