#include "rules/port_changes.h"

#include <tuple>

namespace sb::rules {

namespace {
auto order_key(const ServicePortPlan& p) {
    return std::tie(p.ns, p.service, p.port_name, p.protocol);
}
}  // namespace

std::optional<std::vector<PortChange>> changed_ports(const Plan& previous, const Plan& plan) {
    std::vector<PortChange> out;
    const auto& a = previous.services;
    const auto& b = plan.services;
    size_t i = 0, j = 0;
    // Every step advances past an element; it must not be below its predecessor.
    auto ordered = [](const std::vector<ServicePortPlan>& v, size_t k) {
        return k == 0 || !(order_key(v[k]) < order_key(v[k - 1]));
    };
    while (i < a.size() || j < b.size()) {
        if ((i < a.size() && !ordered(a, i)) || (j < b.size() && !ordered(b, j))) {
            return std::nullopt;
        }
        if (j == b.size() || (i < a.size() && order_key(a[i]) < order_key(b[j]))) {
            out.emplace_back(&a[i++], nullptr);
        } else if (i == a.size() || order_key(b[j]) < order_key(a[i])) {
            out.emplace_back(nullptr, &b[j++]);
        } else {
            if (!(a[i] == b[j])) out.emplace_back(&a[i], &b[j]);
            ++i;
            ++j;
        }
    }
    return out;
}

}  // namespace sb::rules
