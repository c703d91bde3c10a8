#include "proxy/sync/programmed_names.h"

#include <algorithm>
#include <utility>

namespace sb::proxy {

namespace {

watch::Protocol to_watch(rules::Protocol protocol) {
    switch (protocol) {
        case rules::Protocol::kTCP:
            return watch::Protocol::kTCP;
        case rules::Protocol::kUDP:
            return watch::Protocol::kUDP;
        case rules::Protocol::kSCTP:
            return watch::Protocol::kSCTP;
    }
    return watch::Protocol::kTCP;
}

bool before_service(const rules::ServicePortPlan& port, const watch::ObjectKey& key) {
    if (port.ns != key.ns) return port.ns < key.ns;
    return port.service < key.name;
}

// What the plan's ports from `it` serve of their Service (the ports of one
// Service are adjacent, the plan being sorted); `it` is left past them.
dns::ProgrammedServicePtr collect_service(rules::ServicePorts::const_iterator& it,
                                          rules::ServicePorts::const_iterator end) {
    auto service = std::make_shared<dns::ProgrammedService>();
    const std::string& ns = it->ns;
    const std::string& name = it->service;
    for (; it != end && it->ns == ns && it->service == name; ++it) {
        service->cluster_ips.insert(service->cluster_ips.end(), it->cluster_ips.begin(),
                                    it->cluster_ips.end());
        service->ports.push_back({it->port_name, to_watch(it->protocol), it->port});
    }
    auto& ips = service->cluster_ips;
    std::sort(ips.begin(), ips.end());
    ips.erase(std::unique(ips.begin(), ips.end()), ips.end());
    auto& ports = service->ports;
    std::sort(ports.begin(), ports.end());
    ports.erase(std::unique(ports.begin(), ports.end()), ports.end());
    return service;
}

// What both serve (null when nothing).
dns::ProgrammedServicePtr intersect(const dns::ProgrammedServicePtr& a,
                                    const dns::ProgrammedServicePtr& b) {
    if (!a || !b) return nullptr;
    if (*a == *b) return a;
    auto both = std::make_shared<dns::ProgrammedService>();
    std::set_intersection(a->cluster_ips.begin(), a->cluster_ips.end(), b->cluster_ips.begin(),
                          b->cluster_ips.end(), std::back_inserter(both->cluster_ips));
    std::set_intersection(a->ports.begin(), a->ports.end(), b->ports.begin(), b->ports.end(),
                          std::back_inserter(both->ports));
    if (both->cluster_ips.empty() || both->ports.empty()) return nullptr;
    return both;
}

bool same(const dns::ProgrammedServicePtr& a, const dns::ProgrammedServicePtr& b) {
    return a && b ? *a == *b : a == b;
}

}  // namespace

dns::ProgrammedServicePtr programmed_service(const rules::Plan& plan, const watch::ObjectKey& key) {
    auto it = std::lower_bound(plan.services.begin(), plan.services.end(), key, before_service);
    if (it == plan.services.end() || it->ns != key.ns || it->service != key.name) return nullptr;
    return collect_service(it, plan.services.end());
}

void ProgrammedNames::note_plan(const rules::Plan& plan) {
    if (plan.revision != 0 && plan.revision == noted_revision_) return;
    if (plan.changes && noted_revision_ != 0 && plan.changes->base_revision == noted_revision_) {
        for (const auto& [ns, name] : plan.changes->services) pending_.insert({ns, name});
    } else {
        pending_all_ = true;
    }
    noted_revision_ = plan.revision;
}

// `next(kernel, planned)`: what the kernel serves of a Service after the
// step, from what it serves now and what `plan` serves.
template <typename Next>
dns::ProgrammedChanges ProgrammedNames::report(const rules::Plan& plan, Next next) {
    dns::ProgrammedChanges changes;
    auto visit = [&](const watch::ObjectKey& key, const dns::ProgrammedServicePtr& planned) {
        auto it = kernel_.find(key);
        const dns::ProgrammedServicePtr now = it == kernel_.end() ? nullptr : it->second;
        dns::ProgrammedServicePtr after = next(now, planned);
        if (same(now, after)) return;
        changes.emplace_back(key, after);
        if (!after) {
            kernel_.erase(it);
        } else if (it == kernel_.end()) {
            kernel_.emplace(key, std::move(after));
        } else {
            it->second = std::move(after);
        }
    };
    if (!pending_all_) {
        for (const auto& key : pending_) visit(key, programmed_service(plan, key));
        return changes;
    }
    // Every Service: the plan's, grouped in one walk, then those it lost.
    // The kernel's keys and the plan's Services are in the same order
    // (namespace, then name), so the lost ones are found by a merge, with
    // no set of every planned key (5 MB at 50k Services).
    std::vector<watch::ObjectKey> lost;
    auto planned = plan.services.begin();
    for (const auto& [key, state] : kernel_) {
        while (planned != plan.services.end() && before_service(*planned, key)) ++planned;
        if (planned == plan.services.end() || planned->ns != key.ns ||
            planned->service != key.name) {
            lost.push_back(key);
        }
    }
    for (auto it = plan.services.begin(); it != plan.services.end();) {
        const watch::ObjectKey key{it->ns, it->service};
        visit(key, collect_service(it, plan.services.end()));
    }
    for (const auto& key : lost) visit(key, nullptr);
    return changes;
}

dns::ProgrammedChanges ProgrammedNames::before_sync(const rules::Plan& plan) {
    note_plan(plan);
    return report(plan, intersect);
}

dns::ProgrammedChanges ProgrammedNames::after_sync(const rules::Plan& plan) {
    note_plan(plan);
    auto changes = report(plan, [](const dns::ProgrammedServicePtr&,
                                   const dns::ProgrammedServicePtr& planned) { return planned; });
    pending_.clear();
    pending_all_ = false;
    return changes;
}

}  // namespace sb::proxy
