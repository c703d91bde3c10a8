// The daemon's own metrics: kube-proxy's (same names, types, buckets and
// labels as kube-proxy 1.33, so its dashboards and alerts keep working) and
// switchboard's. Every metric, its labels and what moves it: docs/metrics.md.
//
// One backend programs both IP families in one batch (one inet table, or one
// iptables and one ip6tables commit per sync), so each sync counts for both:
// every ip_family-labelled series exists for "IPv4" and "IPv6" from the
// start and moves for both.
//
// Thread safety: every member may be updated from any thread while another
// thread writes them out.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/ip.h"
#include "base/metrics.h"
#include "proxy/options/options.h"

namespace sb::proxy {

// What built this binary and where it runs, for kubernetes_build_info and
// switchboard_build_info.
struct BuildInfo {
    std::string version;           // switchboard's, "0.1.0"
    std::string compiler;          // "gcc" or "clang"
    std::string compiler_version;  // "12.2.0"
    std::string platform;          // GOOS/GOARCH spelling: "linux/amd64"
};
// This binary's: the compiler from its predefined macros, the platform from
// uname(2).
BuildInfo current_build_info(std::string_view version);

struct PendingChanges;  // proxy/sync/change_tracker.h

class ProxyMetrics {
  public:
    // `mode` picks the failure counters kube-proxy has in that mode.
    explicit ProxyMetrics(ProxyMode mode);

    // A sync the backend accepted at `now_unix`, having taken `seconds`.
    void observe_sync(double seconds, bool full, double now_unix);
    // A sync the backend refused (partial: it had the previous plan).
    void count_sync_failure(bool partial);
    // A sync was queued at `now_unix`.
    void queued(double now_unix);
    // One EndpointSlice change reached the kernel `seconds` after its
    // last-change-trigger-time.
    void observe_network_programming(double seconds);
    // Service ports with a Local policy and no local endpoint, per family.
    void set_no_local_endpoints(IpFamily family, uint64_t internal, uint64_t external);
    // A /healthz or /livez answer.
    void count_healthz(unsigned status);
    void count_livez(unsigned status);

    metrics::Counter service_changes;      // kubeproxy_sync_proxy_rules_service_changes_total
    metrics::Counter endpoint_changes;     // kubeproxy_sync_proxy_rules_endpoint_changes_total
    metrics::Counter sync_errors;          // switchboard_sync_errors_total
    metrics::Counter health_check_errors;  // switchboard_health_check_port_errors_total
    // switchboard_sync_kernel_drift_total: periodic checks that found the
    // kernel's objects removed or replaced behind switchboard (a full sync
    // followed).
    metrics::Counter kernel_drift;
    metrics::Gauge plan_service_ports;  // switchboard_plan_service_ports

    // Every family above, the pending gauges and both build_info families.
    void write(metrics::TextWriter& out, const BuildInfo& build,
               const PendingChanges& pending) const;

  private:
    const ProxyMode mode_;
    metrics::Labelled<metrics::Histogram> sync_duration_;
    metrics::Labelled<metrics::Histogram> full_sync_duration_;
    metrics::Labelled<metrics::Histogram> partial_sync_duration_;
    metrics::Labelled<metrics::Histogram> network_programming_duration_;
    metrics::Labelled<metrics::Gauge> last_sync_timestamp_;
    metrics::Labelled<metrics::Gauge> last_queued_timestamp_;
    metrics::Labelled<metrics::Gauge> no_local_endpoints_;
    metrics::Labelled<metrics::Counter> healthz_total_;
    metrics::Labelled<metrics::Counter> livez_total_;
    // nftables: ..._nftables_sync_failures_total; iptables:
    // ..._iptables_restore_failures_total and ..._partial_restore_failures_total.
    metrics::Labelled<metrics::Counter> sync_failures_;
    metrics::Labelled<metrics::Counter> partial_sync_failures_;
    // nftables: ..._nftables_cleanup_failures_total, at 0 for good:
    // kube-proxy deletes stale chains in a transaction after the sync's and
    // counts its failures here; switchboard deletes them in the sync's own
    // batch, so such a failure is a sync failure (docs/metrics.md).
    metrics::Labelled<metrics::Counter> nftables_cleanup_failures_;
};

// kube-proxy's buckets for network programming latency (metrics.go merge()):
// 0, then 0.25 and 0.5, 1..59 by 1, 60..115 by 5, 120..300 by 30.
std::vector<double> network_programming_buckets();

}  // namespace sb::proxy
