// The daemon's lifecycle: start, stop, lameduck. It owns the Store and its
// source, the HTTP servers and their routes, the sync thread (ProxySync)
// and the DNS wiring (DnsWiring), and starts and stops them in order.
//
// Data path: source (file or API server) -> Store -> ProxySync (records the
// changed Services, queues a sync) -> its SyncRunner thread -> plan ->
// Backend::sync(plan, previous) -> DNS, health and metrics. Nothing is
// programmed before the Store holds a complete initial state. See
// docs/daemon.md.
//
// Thread safety: start(), stop() and lameduck() for one controlling thread;
// first_sync_done() from any thread; metrics_text() from any thread once
// start() returned (the routes run it on the HTTP server's io thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/containers/published.h"
#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "proxy/app/backend_choice.h"
#include "proxy/app/dns_wiring.h"
#include "proxy/app/exit_codes.h"  // start()'s errors map to exit codes
#include "proxy/app/node_state.h"
#include "proxy/app/proxy_sync.h"
#include "proxy/http/health.h"
#include "proxy/http/metrics.h"
#include "proxy/http/server.h"
#include "proxy/options/options.h"
#include "rules/plan.h"
#include "watch/file_source.h"
#include "watch/kube/kube_source.h"
#include "watch/store.h"

namespace sb::proxy {

// How often a metrics or healthz port that could not be bound is retried.
inline constexpr std::chrono::milliseconds kBindRetryPeriod{5000};

class Daemon {
  public:
    // `node_state`: the node state folder this process holds the kernel
    // lock of (proxy/app/node_state.h); none: the daemon keeps no state.
    Daemon(Options options, BackendFactory backend_factory,
           std::optional<NodeState> node_state = std::nullopt);
    ~Daemon();  // stop()s
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Binds the HTTP servers, starts the source, DNS and the sync runner.
    // Errors name the flag or file; see exit_code_for().
    Status start();
    // Stops everything; the kernel rules stay in place (as kube-proxy
    // leaves them on exit). Idempotent.
    void stop();
    // A rolling update (run.cpp): the next daemon takes over. Stops the
    // sync thread after the sync in progress (the kernel is the next
    // daemon's), then, once the sockets were passed, stops serving DNS and
    // HTTP (the next daemon serves the same sockets). Idempotent.
    void stop_syncing();
    void stop_serving();
    // Before stop() on SIGTERM: the Corefile's health `lameduck`, during
    // which DNS and every endpoint go on serving. Blocks.
    // `cut_short` ends it early (asked every 20 ms): a daemon started
    // meanwhile takes the sockets over.
    void lameduck(const std::function<bool()>& cut_short) const;

    // The routes served on --metrics-bind-address and --healthz-bind-address.
    HttpRoutes metrics_routes();
    HttpRoutes healthz_routes();
    // Bound ports (0 when that server is off), for tests.
    uint16_t metrics_port() const;
    uint16_t healthz_port() const;

    bool first_sync_done() const { return sync_.first_sync_done(); }
    std::string metrics_text() const;
    watch::Store& store() { return store_; }

  private:
    // Serves `routes` on `address` (nothing when unset), as --bind-address-hard-fail says.
    Status serve_http(const char* flag, const std::optional<HostPort>& address, HttpRoutes routes,
                      int& listener);
    void on_store_changes(const std::vector<watch::Change>& changes);
    // The Store holds a complete initial state: syncs may start.
    void on_store_ready();

    const Options options_;
    const BuildInfo build_info_;
    ProxyMetrics metrics_;
    ProxierHealth health_;
    watch::Store store_;
    HttpServer http_;
    // Binds of the metrics and healthz servers that failed (each retried).
    metrics::Counter http_bind_failures_;
    int metrics_listener_ = 0;
    int healthz_listener_ = 0;
    std::unique_ptr<watch::FileSource> file_source_;
    std::unique_ptr<watch::kube::KubeSource> kube_source_;
    const std::optional<NodeState> node_state_;
    DnsWiring dns_;
    ProxySync sync_;
    std::atomic<bool> store_ready_{false};
    bool started_ = false;

    // /debug/services' JSON of a plan, written once per plan: ~0.2 s at
    // 10k Services would otherwise stall the io thread on every request.
    struct PlanJson {
        std::shared_ptr<const rules::Plan> plan;
        std::string json;
    };
    Published<PlanJson> debug_json_;  // the io thread writes it
};

}  // namespace sb::proxy
