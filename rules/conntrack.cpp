#include "rules/conntrack.h"

#include <errno.h>

#include <chrono>
#include <memory>
#include <set>

#include <fmt/format.h>

namespace sb::rules {

UdpServiceTargets::UdpServiceTargets(const Plan& plan) {
    for (const ServicePortPlan& port : plan.services) add(port);
}

void UdpServiceTargets::add(const ServicePortPlan& port) {
    count(port, true);
}

void UdpServiceTargets::remove(const ServicePortPlan& port) {
    count(port, false);
}

void UdpServiceTargets::count(const ServicePortPlan& port, bool in) {
    if (port.protocol != Protocol::kUDP) return;
    std::set<std::pair<IpAddress, uint16_t>> endpoints;
    for (const auto* list : {&port.cluster_endpoints, &port.local_endpoints}) {
        for (const Endpoint& e : *list) endpoints.emplace(e.ip, e.port);
    }
    if (endpoints.empty()) return;
    // Adds `endpoints` to, or takes them out of, `counts`; false when
    // `counts` is left empty (its key goes, so that it matches no flow).
    auto apply = [&](EndpointCounts& counts) {
        for (const auto& endpoint : endpoints) {
            if (in) {
                ++counts[endpoint];
            } else if (auto it = counts.find(endpoint); it != counts.end() && --it->second == 0) {
                counts.erase(it);
            }
        }
        return !counts.empty();
    };
    for (const auto* list : {&port.cluster_ips, &port.external_ips, &port.load_balancer_ips}) {
        for (const IpAddress& ip : *list) {
            size_t& addresses = ip.family() == IpFamily::kV4 ? v4_addresses_ : v6_addresses_;
            auto [it, inserted] = by_address_.try_emplace({ip, port.port});
            if (inserted) ++addresses;
            if (!apply(it->second)) {
                by_address_.erase(it);
                --addresses;
            }
        }
    }
    if (port.node_port != 0) {
        auto it = by_node_port_.try_emplace(port.node_port).first;
        if (!apply(it->second)) by_node_port_.erase(it);
    }
}

bool UdpServiceTargets::stale(const UdpFlow& flow) const {
    const std::pair<IpAddress, uint16_t> reply{flow.reply_src, flow.reply_sport};
    if (auto it = by_address_.find({flow.orig_dst, flow.orig_dport}); it != by_address_.end()) {
        if (!it->second.count(reply)) return true;
    }
    if (auto it = by_node_port_.find(flow.orig_dport); it != by_node_port_.end()) {
        if (!it->second.count(reply)) return true;
    }
    return false;
}

bool UdpServiceTargets::tracks(IpFamily family) const {
    if (!by_node_port_.empty()) return true;
    return (family == IpFamily::kV4 ? v4_addresses_ : v6_addresses_) > 0;
}

namespace {

// Dumps one family's flows and deletes the stale ones.
void reconcile_family(const UdpServiceTargets& targets, ConntrackTable& table,
                      ConntrackReconcile& out) {
    out.dumped = true;
    std::vector<UdpFlow> flows;
    const Status listed = table.dump_udp(out.family, flows);
    // The flows found before a failed dump are stale all the same.
    std::vector<UdpFlow> doomed;
    for (const UdpFlow& flow : flows) {
        if (targets.stale(flow)) doomed.push_back(flow);
    }
    std::optional<Error> delete_error;
    for (const Status& removed : table.remove(out.family, doomed)) {
        if (removed) {
            ++out.deleted;
        } else if (removed.error().errno_value != ENOENT && !delete_error) {
            delete_error = removed.error();  // ENOENT: it expired meanwhile, as wanted
        }
    }
    if (!listed) {
        out.ok = false;
        out.error = fmt::format("conntrack: {}", listed.error().describe());
    } else if (delete_error) {
        out.ok = false;
        out.error = fmt::format("conntrack: {}", delete_error->describe());
    }
}

}  // namespace

std::vector<ConntrackReconcile> reconcile_udp_conntrack(const UdpServiceTargets& targets,
                                                        ConntrackTable& table) {
    std::vector<ConntrackReconcile> out;
    for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        ConntrackReconcile& r = out.emplace_back();
        r.family = family;
        if (!targets.tracks(family)) continue;
        const auto started = std::chrono::steady_clock::now();
        reconcile_family(targets, table, r);
        r.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    return out;
}

std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan, ConntrackTable& table) {
    return reconcile_udp_conntrack(UdpServiceTargets(plan), table);
}

UdpConntrackReconciler::UdpConntrackReconciler(std::unique_ptr<ConntrackTable> table)
    : table_(std::move(table)) {}

std::vector<ConntrackReconcile> UdpConntrackReconciler::reconcile(
    const Plan& plan, const Plan* previous, const std::vector<PortChange>* changed) {
    update_targets(plan, previous, changed);
    return reconcile_udp_conntrack(targets_, *table_);
}

void UdpConntrackReconciler::update_targets(const Plan& plan, const Plan* previous,
                                            const std::vector<PortChange>* changed) {
    if (previous && targets_revision_ != 0 && previous->revision == targets_revision_) {
        std::optional<std::vector<PortChange>> computed;
        if (!changed) {
            computed = changed_ports(*previous, plan);
            if (computed) changed = &*computed;
        }
        if (changed) {
            for (const auto& [old, now] : *changed) {
                if (old) targets_.remove(*old);
                if (now) targets_.add(*now);
            }
            targets_revision_ = plan.revision;
            return;
        }
    }
    targets_ = UdpServiceTargets(plan);
    targets_revision_ = plan.revision;
}

}  // namespace sb::rules
