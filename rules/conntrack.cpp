#include "rules/conntrack.h"

#include <errno.h>

#include <algorithm>
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
    for (const auto* list :
         {&port.cluster_endpoints, &port.local_endpoints, &port.other_serving_endpoints}) {
        for (const Endpoint& e : *list) endpoints.emplace(e.ip, e.port);
    }
    // Adds the port and its endpoints to, or takes them out of, `frontend`;
    // false when no port leads there any more (its key goes).
    auto apply = [&](Frontend& frontend) {
        frontend.ports = in ? frontend.ports + 1 : frontend.ports - 1;
        for (const auto& endpoint : endpoints) {
            if (in) {
                ++frontend.endpoints[endpoint];
            } else if (auto it = frontend.endpoints.find(endpoint);
                       it != frontend.endpoints.end() && --it->second == 0) {
                frontend.endpoints.erase(it);
            }
        }
        return frontend.ports != 0;
    };
    for (const auto* list : {&port.cluster_ips, &port.external_ips, &port.load_balancer_ips}) {
        for (const IpAddress& ip : *list) {
            const std::pair<IpAddress, uint16_t> key{ip, port.port};
            size_t& addresses = ip.family() == IpFamily::kV4 ? v4_addresses_ : v6_addresses_;
            auto [it, inserted] = by_address_.try_emplace(key);
            if (inserted) {
                ++addresses;
                retired_addresses_.erase(key);
            }
            if (!apply(it->second)) {
                by_address_.erase(it);
                --addresses;
                retired_addresses_.insert(key);
            }
        }
    }
    if (port.node_port != 0) {
        auto [it, inserted] = by_node_port_.try_emplace(port.node_port);
        if (inserted) {
            for (auto& retired : retired_node_ports_) retired.erase(port.node_port);
        }
        if (!apply(it->second)) {
            by_node_port_.erase(it);
            retire_node_port(port.node_port);
        }
    }
}

void UdpServiceTargets::retire_address(const std::pair<IpAddress, uint16_t>& address) {
    if (!by_address_.count(address)) retired_addresses_.insert(address);
}

void UdpServiceTargets::retire_node_port(uint16_t node_port) {
    if (by_node_port_.count(node_port)) return;
    for (auto& retired : retired_node_ports_) retired.insert(node_port);
}

void UdpServiceTargets::retire(const UdpFrontends& dnated) {
    for (const auto& address : dnated.addresses) retire_address(address);
    for (const uint16_t node_port : dnated.node_ports) retire_node_port(node_port);
}

void UdpServiceTargets::retire_missing(const UdpServiceTargets& earlier) {
    for (const auto& [address, frontend] : earlier.by_address_) retire_address(address);
    for (const auto& address : earlier.retired_addresses_) retire_address(address);
    for (const auto& [node_port, frontend] : earlier.by_node_port_) retire_node_port(node_port);
    for (size_t family = 0; family < retired_node_ports_.size(); ++family) {
        for (const uint16_t node_port : earlier.retired_node_ports_[family]) {
            if (!by_node_port_.count(node_port)) retired_node_ports_[family].insert(node_port);
        }
    }
}

void UdpServiceTargets::forget_retired(IpFamily family) {
    std::erase_if(retired_addresses_,
                  [&](const auto& address) { return address.first.family() == family; });
    retired_node_ports_[family == IpFamily::kV4 ? 0 : 1].clear();
}

namespace {

// Something rewrote the flow's destination: the reply comes from elsewhere.
bool dnated(const UdpFlow& flow) {
    return flow.reply_src != flow.orig_dst || flow.reply_sport != flow.orig_dport;
}

}  // namespace

bool UdpServiceTargets::stale_at(const Frontend& frontend, const UdpFlow& flow) {
    if (frontend.endpoints.empty()) return dnated(flow);
    return !frontend.endpoints.count({flow.reply_src, flow.reply_sport});
}

bool UdpServiceTargets::stale(const UdpFlow& flow) const {
    const std::pair<IpAddress, uint16_t> destination{flow.orig_dst, flow.orig_dport};
    if (auto it = by_address_.find(destination); it != by_address_.end()) {
        if (stale_at(it->second, flow)) return true;
    } else if (retired_addresses_.count(destination) && dnated(flow)) {
        return true;
    }
    if (auto it = by_node_port_.find(flow.orig_dport); it != by_node_port_.end()) {
        return stale_at(it->second, flow);
    }
    const auto& retired = retired_node_ports_[flow.orig_dst.family() == IpFamily::kV4 ? 0 : 1];
    return retired.count(flow.orig_dport) && dnated(flow);
}

bool UdpServiceTargets::tracks(IpFamily family) const {
    const size_t index = family == IpFamily::kV4 ? 0 : 1;
    if (!by_node_port_.empty() || !retired_node_ports_[index].empty()) return true;
    if ((family == IpFamily::kV4 ? v4_addresses_ : v6_addresses_) > 0) return true;
    return std::any_of(retired_addresses_.begin(), retired_addresses_.end(),
                       [&](const auto& address) { return address.first.family() == family; });
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
    const Plan& plan, const Plan* previous, const std::vector<PortChange>* changed,
    const UdpFrontends* dnated_before) {
    update_targets(plan, previous, changed);
    if (dnated_before) targets_.retire(*dnated_before);
    reconciled_ = true;
    std::vector<ConntrackReconcile> results = reconcile_udp_conntrack(targets_, *table_);
    for (const ConntrackReconcile& r : results) {
        if (r.ok) targets_.forget_retired(r.family);
    }
    return results;
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
    UdpServiceTargets rebuilt(plan);
    rebuilt.retire_missing(targets_);
    targets_ = std::move(rebuilt);
    targets_revision_ = plan.revision;
}

}  // namespace sb::rules
