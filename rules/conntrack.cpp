#include "rules/conntrack.h"

#include <errno.h>

#include <chrono>
#include <memory>

#include "rules/conntrack_kernel.h"

namespace sb::rules {

UdpServiceTargets::UdpServiceTargets(const Plan& plan) {
    for (const ServicePortPlan& port : plan.services) {
        if (port.protocol != Protocol::kUDP) continue;
        EndpointSet endpoints;
        for (const auto* list : {&port.cluster_endpoints, &port.local_endpoints}) {
            for (const Endpoint& e : *list) endpoints.emplace(e.ip, e.port);
        }
        if (endpoints.empty()) continue;
        // Two ports sharing an address (external IPs are not unique in the
        // API) keep the flows of either's endpoints.
        for (const auto* list : {&port.cluster_ips, &port.external_ips, &port.load_balancer_ips}) {
            for (const IpAddress& ip : *list) {
                by_address_[{ip, port.port}].insert(endpoints.begin(), endpoints.end());
            }
        }
        if (port.node_port != 0) {
            by_node_port_[port.node_port].insert(endpoints.begin(), endpoints.end());
        }
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
    for (const auto& [address, endpoints] : by_address_) {
        if (address.first.family() == family) return true;
    }
    return false;
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
        out.error = "conntrack: " + listed.error().describe();
    } else if (delete_error) {
        out.ok = false;
        out.error = "conntrack: " + delete_error->describe();
    }
}

}  // namespace

std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan, ConntrackTable& table) {
    const UdpServiceTargets targets(plan);
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

std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan) {
    const std::unique_ptr<ConntrackTable> kernel = make_kernel_conntrack_table();
    return reconcile_udp_conntrack(plan, *kernel);
}

}  // namespace sb::rules
