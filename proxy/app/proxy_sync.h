// ProxySync: the daemon's sync thread, from the Store's changes to the
// kernel. The Store listener records the changed Services and queues a
// sync; the SyncRunner's thread then plans (full or incremental), makes the
// backend from this Node's resolved options (again when they change), calls
// Backend::sync(plan, previous), tells DNS which names it may publish, and
// follows the plan with its metrics and health-check node ports. Syncs never
// run on a source's thread, and none runs before set_store_ready().
//
// Thread safety: on_store_changes() from the Store's writers (any thread);
// set_store_ready(), first_sync_done(), last_plan() and write_metrics() from
// any thread; start() and stop() for the daemon's controlling thread. Every
// other member is the sync thread's alone.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

#include "base/containers/published.h"
#include "base/metrics.h"
#include "base/result.h"
#include "proxy/app/backend_choice.h"
#include "proxy/http/backend_metrics.h"
#include "proxy/http/health.h"
#include "proxy/http/metrics.h"
#include "proxy/http/server.h"
#include "proxy/options/options.h"
#include "proxy/sync/change_tracker.h"
#include "proxy/sync/no_local_endpoints.h"
#include "proxy/sync/programmed_names.h"
#include "proxy/sync/sync_runner.h"
#include "rules/backend.h"
#include "rules/plan.h"
#include "watch/store.h"

namespace sb::proxy {

class DnsWiring;

class ProxySync {
  public:
    // `options`, `store`, `http`, `metrics`, `health` and `dns` must outlive
    // this object; the health-check node ports listen on `http`.
    ProxySync(const Options& options, BackendFactory backend_factory, const watch::Store& store,
              HttpServer& http, ProxyMetrics& metrics, ProxierHealth& health, const DnsWiring& dns);
    ProxySync(const ProxySync&) = delete;
    ProxySync& operator=(const ProxySync&) = delete;

    // A Store listener's batch: counts the events, records the Services
    // concerned and queues a sync when one of them changed. Cheap.
    void on_store_changes(const std::vector<watch::Change>& changes);
    // The Store holds a complete initial state: syncs may start.
    void set_store_ready();
    void start();  // the sync thread
    void stop();   // idempotent; waits for a running sync to finish

    bool first_sync_done() const;
    // The last plan computed (whether or not the kernel accepted it); null
    // before the first one.
    std::shared_ptr<const rules::Plan> last_plan() const;
    // kube-proxy's families (with the changes still pending) and the
    // backend's.
    void write_metrics(metrics::TextWriter& out, const BuildInfo& build_info) const;

  private:
    Status sync(SyncKind kind);  // the runner's SyncFunction
    struct Planned {
        std::shared_ptr<const rules::Plan> plan;
        std::shared_ptr<const watch::Snapshot> snapshot;  // what it was planned from
        std::vector<std::chrono::system_clock::time_point> trigger_times;  // Batch's
    };
    Planned compute_plan(bool full);
    // A periodic sync's drift check: whether it must be full after all.
    bool kernel_drifted();
    // The plan-wide metrics of `plan`, and its health-check node ports, from
    // the ports that changed since the plan computed before it (nullopt:
    // unknown, everything is looked at).
    void record_plan_metrics(const rules::Plan& plan,
                             const std::optional<std::vector<rules::PortChange>>& changes);
    void update_health_ports(const rules::Plan& plan,
                             const std::optional<std::vector<rules::PortChange>>& changes);
    // Network programming latency of every unobserved trigger time, at `now`.
    void observe_network_programming(std::chrono::system_clock::time_point now);

    const Options& options_;
    const BackendFactory backend_factory_;
    const watch::Store& store_;
    ProxyMetrics& metrics_;
    ProxierHealth& health_;
    const DnsWiring& dns_;
    const SteadyClock clock_;
    BackendMetrics backend_metrics_;
    ChangeTracker tracker_;
    HealthCheckPorts health_ports_;
    SyncRunner runner_;
    // The last computed plan, for /debug/services.
    Published<rules::Plan> published_;

    // Sync thread only.
    std::unique_ptr<rules::Backend> backend_;
    std::vector<IpAddress> health_check_addresses_;  // resolved with the backend
    // EndpointSlice trigger times not yet in a plan the kernel accepted.
    std::vector<std::chrono::system_clock::time_point> unobserved_trigger_times_;
    rules::BackendOptions backend_options_;        // what backend_ was made with
    std::shared_ptr<const rules::Plan> computed_;  // the last plan computed
    std::shared_ptr<const rules::Plan> applied_;   // the last plan the backend accepted
    // The last sync's conntrack reconcile failed, or it left IPVS real
    // servers draining: the next sync reaches the backend even when the plan
    // is unchanged, so the reconcile is retried and the drains are finished.
    bool sync_unchanged_plan_ = false;
    NoLocalEndpointCounts no_local_endpoints_;  // of computed_
    ProgrammedNames programmed_names_;          // what DNS may publish: of applied_
    // The last health-check port update failed to open a port: the next one
    // runs even when no health-checked Service changed, so it is retried.
    bool retry_health_ports_ = false;
};

}  // namespace sb::proxy
