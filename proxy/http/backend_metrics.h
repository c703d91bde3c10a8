// Metrics of what a backend reports about a sync beyond the rules
// themselves (rules::SyncStats): the UDP conntrack reconciler (kube-proxy's
// kubeproxy_conntrack_reconciler_* families, labelled by ip_family, plus
// switchboard's failure counter), iptables mode's rule counts (kube-proxy's
// kubeproxy_sync_proxy_rules_iptables_total and _last), iptables chain-name
// collisions and route_localnet failures, and stale netlink messages.
// docs/metrics.md.
//
// Thread safety: record() from the sync thread while any thread writes.
#pragma once

#include "base/metrics.h"
#include "rules/backend.h"

namespace sb::proxy {

class BackendMetrics {
  public:
    // `iptables`: the mode has kube-proxy's iptables rule gauges.
    explicit BackendMetrics(bool iptables);

    // The stats of a sync the backend accepted. Returns whether a conntrack
    // reconcile failed: the caller then syncs again at the next chance even
    // when the plan did not change, so the reconcile is retried.
    bool record(const rules::SyncStats& stats);

    void write(metrics::TextWriter& out) const;

  private:
    metrics::Labelled<metrics::Histogram> reconcile_duration_;
    metrics::Labelled<metrics::Counter> reconcile_deleted_;
    metrics::Labelled<metrics::Counter> reconcile_failures_;
    const bool iptables_;
    metrics::Labelled<metrics::Gauge> iptables_rules_total_;
    metrics::Labelled<metrics::Gauge> iptables_rules_last_;
    metrics::Gauge chain_name_collisions_;
    metrics::Counter stale_netlink_messages_;
    metrics::Counter route_localnet_failures_;
};

}  // namespace sb::proxy
