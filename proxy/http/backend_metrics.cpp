#include "proxy/http/backend_metrics.h"

#include <string>

namespace sb::proxy {

namespace {

using metrics::Family;
using metrics::Type;

// kube-proxy 1.33's (pkg/proxy/metrics): names, help texts, labels and the
// sync buckets (1 ms doubling 15 times).
const Family kReconcileDuration{"kubeproxy_conntrack_reconciler_sync_duration_seconds",
                                "ReconcileConntrackFlowsLatency latency in seconds",
                                Type::kHistogram,
                                {"ip_family"}};
const Family kReconcileDeleted{"kubeproxy_conntrack_reconciler_deleted_entries_total",
                               "Cumulative conntrack flows deleted by conntrack reconciler",
                               Type::kCounter,
                               {"ip_family"}};
const Family kReconcileFailures{
    "switchboard_conntrack_reconciler_failures_total",
    "Conntrack reconciles whose dump or deletes failed (each is retried at the next sync)",
    Type::kCounter,
    {"ip_family"}};
const Family kIptablesRulesTotal{"kubeproxy_sync_proxy_rules_iptables_total",
                                 "Total number of iptables rules owned by kube-proxy",
                                 Type::kGauge,
                                 {"ip_family", "table"}};
const Family kIptablesRulesLast{"kubeproxy_sync_proxy_rules_iptables_last",
                                "Number of iptables rules written by kube-proxy in last sync",
                                Type::kGauge,
                                {"ip_family", "table"}};
const Family kChainNameCollisions{
    "switchboard_iptables_chain_name_collisions",
    "Service ports and endpoints of the last iptables sync skipped because their chain name "
    "collided with another's",
    Type::kGauge,
    {}};
const Family kRouteLocalnetFailures{
    "switchboard_iptables_route_localnet_failures_total",
    "iptables syncs with localhost NodePorts on that could not set "
    "net.ipv4.conf.all.route_localnet to 1 (each is retried at the next sync)",
    Type::kCounter,
    {}};
const Family kStaleNetlinkMessages{
    "switchboard_netlink_stale_messages_total",
    "Netlink answers to an earlier request, skipped instead of charged to the current one",
    Type::kCounter,
    {}};

}  // namespace

BackendMetrics::BackendMetrics(bool iptables)
    : reconcile_duration_(kReconcileDuration, metrics::exponential_buckets(0.001, 2, 15)),
      reconcile_deleted_(kReconcileDeleted),
      reconcile_failures_(kReconcileFailures),
      iptables_(iptables),
      iptables_rules_total_(kIptablesRulesTotal),
      iptables_rules_last_(kIptablesRulesLast) {
    for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        const std::string label = to_string(family);
        reconcile_duration_.with({label});
        reconcile_deleted_.with({label});
        reconcile_failures_.with({label});
        for (const char* table : {"filter", "nat"}) {
            iptables_rules_total_.with({label, table});
            iptables_rules_last_.with({label, table});
        }
    }
}

bool BackendMetrics::record(const rules::SyncStats& stats) {
    bool failed = false;
    for (const rules::ConntrackReconcile& r : stats.conntrack) {
        if (!r.dumped) continue;
        const std::string label = to_string(r.family);
        reconcile_duration_.with({label}).observe(r.seconds);
        reconcile_deleted_.with({label}).inc(r.deleted);
        if (!r.ok) {
            reconcile_failures_.with({label}).inc();
            failed = true;
        }
    }
    for (const auto& table : stats.iptables_rules) {
        const std::string label = to_string(table.family);
        iptables_rules_total_.with({label, table.table}).set(static_cast<double>(table.total));
        iptables_rules_last_.with({label, table.table}).set(static_cast<double>(table.written));
    }
    chain_name_collisions_.set(static_cast<double>(stats.chain_name_collisions));
    stale_netlink_messages_.inc(stats.stale_netlink_messages);
    route_localnet_failures_.inc(stats.route_localnet_failures);
    return failed;
}

void BackendMetrics::write(metrics::TextWriter& out) const {
    reconcile_duration_.write(out);
    reconcile_deleted_.write(out);
    reconcile_failures_.write(out);
    // kube-proxy registers them in iptables mode only.
    if (iptables_) {
        iptables_rules_total_.write(out);
        iptables_rules_last_.write(out);
    }
    metrics::write_metric(out, kChainNameCollisions, chain_name_collisions_);
    metrics::write_metric(out, kStaleNetlinkMessages, stale_netlink_messages_);
    metrics::write_metric(out, kRouteLocalnetFailures, route_localnet_failures_);
}

}  // namespace sb::proxy
