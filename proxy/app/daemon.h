// The daemon: wires a source, the Store, the change tracker, the planner,
// the sync runner, a backend, DNS and the HTTP endpoints together; plus the
// one-shot commands (plan, --dry-run, --cleanup).
//
// Data path: source (file or API server) -> Store -> listener (records the
// changed Services, queues a sync) -> SyncRunner thread -> plan (full or
// incremental) -> Backend::sync(plan, previous) -> health and metrics.
// Syncs never run on a source's thread, and nothing is programmed before
// the Store holds a complete initial state. See docs/daemon.md.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "dns/dns_service.h"
#include "proxy/app/corefile_reload.h"
#include "proxy/http/backend_metrics.h"
#include "proxy/http/coredns_endpoints.h"
#include "proxy/http/health.h"
#include "proxy/http/metrics.h"
#include "proxy/http/server.h"
#include "proxy/options/options.h"
#include "proxy/sync/change_tracker.h"
#include "proxy/sync/no_local_endpoints.h"
#include "proxy/sync/programmed_names.h"
#include "proxy/sync/sync_runner.h"
#include "rules/backend.h"
#include "watch/file_source.h"
#include "watch/kube/kube_source.h"
#include "watch/store.h"

namespace sb::proxy {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a runtime failure
inline constexpr int kExitUsage = 2;    // bad flags or configuration

// How often a metrics or healthz port that could not be bound is retried.
inline constexpr std::chrono::milliseconds kBindRetryPeriod{5000};

// Exit code for an error: kInvalidArgument (bad flag, file or kubeconfig) is
// a configuration problem, anything else a runtime failure.
int exit_code_for(const Error& error);

using BackendFactory = std::function<std::unique_ptr<rules::Backend>(const rules::BackendOptions&)>;
// The backend of a proxy mode; an error (one line, exit 1) for modes that
// are not built.
Result<BackendFactory> backend_factory(ProxyMode mode);

// The mode the daemon runs in when `asked` is: ipvs on a kernel without IPVS
// (no ip_vs module) runs nftables instead, with one warning line saying so;
// /proxyMode and the metrics report the mode in use.
ProxyMode mode_in_use(ProxyMode asked);

// --nodeport-addresses=primary: this node's first InternalIP of each family
// (from its Node object) as host prefixes; empty when the Node is unknown.
std::vector<Prefix> primary_node_prefixes(const watch::Snapshot& snapshot,
                                          const std::string& node_name);

class Daemon {
  public:
    Daemon(Options options, BackendFactory backend_factory);
    ~Daemon();  // stop()s
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Binds the HTTP servers, starts the source, DNS and the sync runner.
    // Errors name the flag or file; see exit_code_for().
    Status start();
    // Stops everything; the kernel rules stay in place (as kube-proxy
    // leaves them on exit). Idempotent.
    void stop();
    // Before stop() on SIGTERM: the Corefile's health `lameduck`, during
    // which DNS and every endpoint go on serving. Blocks.
    void lameduck() const;

    // The routes served on --metrics-bind-address and --healthz-bind-address.
    HttpRoutes metrics_routes();
    HttpRoutes healthz_routes();
    // Bound ports (0 when that server is off), for tests.
    uint16_t metrics_port() const;
    uint16_t healthz_port() const;

    bool first_sync_done() const { return runner_.ever_succeeded(); }
    std::shared_ptr<const rules::Plan> last_plan() const;
    std::string metrics_text() const;
    // What the Corefile's prometheus serves: coredns_build_info, the DNS
    // and process families.
    std::string coredns_metrics_text() const;
    watch::Store& store() { return store_; }

  private:
    // Serves `routes` on `address` (nothing when unset), as --bind-address-hard-fail says.
    Status serve_http(const char* flag, const std::optional<HostPort>& address, HttpRoutes routes,
                      int& listener);
    void on_store_changes(const std::vector<watch::Change>& changes);
    // The Corefile's `reload`: applies a changed Corefile over the flags'
    // DNS options (DNS, then CoreDNS's HTTP endpoints). Reloader thread.
    Result<std::optional<dns::ReloadConfig>> apply_reloaded_corefile(const std::string& text);
    // Opens `config`'s endpoints in place of the current ones, unless equal.
    void replace_coredns_endpoints(CorednsEndpointsConfig config);
    // `dns` with the node-local listen addresses and the proxy's ordering
    // of names after rules.
    dns::DnsOptions with_node_parts(dns::DnsOptions dns) const;
    // The Store holds a complete initial state: syncs may start.
    void on_store_ready();
    Status sync(bool full);  // the runner's SyncFunction
    struct Planned {
        std::shared_ptr<const rules::Plan> plan;
        std::shared_ptr<const watch::Snapshot> snapshot;  // what it was planned from
        std::vector<std::chrono::system_clock::time_point> trigger_times;  // Batch's
    };
    Planned compute_plan(bool full);
    // The plan-wide metrics of `plan`, and its health-check node ports, from
    // the ports that changed since the plan computed before it (nullopt:
    // unknown, everything is looked at).
    void record_plan_metrics(const rules::Plan& plan,
                             const std::optional<std::vector<rules::PortChange>>& changes);
    void update_health_ports(const rules::Plan& plan,
                             const std::optional<std::vector<rules::PortChange>>& changes);
    // Network programming latency of every unobserved trigger time, at `now`.
    void observe_network_programming(std::chrono::system_clock::time_point now);

    const Options options_;
    const BackendFactory backend_factory_;
    const SteadyClock clock_;
    const BuildInfo build_info_;
    ProxyMetrics metrics_;
    BackendMetrics backend_metrics_;
    ProxierHealth health_;
    watch::Store store_;
    ChangeTracker tracker_;
    HttpServer http_;
    // Binds of the metrics and healthz servers that failed (each retried).
    metrics::Counter http_bind_failures_;
    int metrics_listener_ = 0;
    int healthz_listener_ = 0;
    HealthCheckPorts health_ports_;
    SyncRunner runner_;
    std::unique_ptr<watch::FileSource> file_source_;
    std::unique_ptr<watch::kube::KubeSource> kube_source_;
    std::unique_ptr<dns::DnsService> dns_;
    // On http_, read dns_ and store_. Replaced by a reload: guarded by
    // coredns_mutex_; the replaced ones are kept (closed) until stop(), as
    // requests in flight may still run their handlers.
    mutable std::mutex coredns_mutex_;
    std::shared_ptr<CorednsEndpoints> coredns_;
    std::vector<std::shared_ptr<CorednsEndpoints>> retired_coredns_;
    std::unique_ptr<CorefileReloader> reloader_;  // with `reload` in the Corefile
    std::atomic<bool> store_ready_{false};
    bool started_ = false;

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

    // The last computed plan, for /debug/services.
    mutable std::mutex published_mutex_;
    std::shared_ptr<const rules::Plan> published_;
    // /debug/services' JSON of debug_json_plan_ (io thread).
    std::mutex debug_json_mutex_;
    std::shared_ptr<const rules::Plan> debug_json_plan_;
    std::string debug_json_;
};

// Runs what `options` ask for (the daemon, plan, --dry-run or --cleanup) and
// returns the exit code; errors are printed as one line "switchboard: ...".
// Precondition: SIGINT and SIGTERM are blocked in every thread (main() does
// it first), so that they are taken here with sigtimedwait.
int run(const Options& options);

}  // namespace sb::proxy
