#include "proxy/app/daemon.h"

#include <cstdlib>

#include <fmt/format.h>

#include "base/listeners/socket_pool.h"
#include "base/log.h"
#include "proxy/app/bootstrap_check.h"
#include "proxy/app/source_state.h"
#include "proxy/http/process_metrics.h"
#include "rules/plan_json.h"

#ifndef SWITCHBOARD_VERSION
#define SWITCHBOARD_VERSION "unknown"
#endif

namespace sb::proxy {

namespace {

HttpResponse text_response(unsigned status, std::string body) {
    return HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

}  // namespace

Daemon::Daemon(Options options, BackendFactory backend_factory, std::optional<NodeState> node_state)
    : options_(std::move(options)),
      build_info_(current_build_info(SWITCHBOARD_VERSION)),
      metrics_(options_.proxy_mode),
      // kube-proxy: unhealthy once an update waits 2 x syncPeriod.
      health_(2 * options_.sync_period),
      node_state_(std::move(node_state)),
      dns_(options_, store_, http_, build_info_),
      sync_(options_, std::move(backend_factory), store_, http_, metrics_, health_, dns_) {
    store_.subscribe(
        [this](const std::vector<watch::Change>& changes) { on_store_changes(changes); });
}

Daemon::~Daemon() {
    stop();
}

Status Daemon::start() {
    if (started_) return {};
    started_ = true;
    // kube-proxy's SyncLoop marks the proxy updated when it starts, "in case
    // Sync() never succeeds": /healthz and /livez stay 200 until a change is
    // queued and not synced within the timeout. So an API server that cannot
    // be reached does not get the Pod restarted in a loop (a restart cannot
    // reach it either); /readyz tells that nothing is programmed yet.
    health_.updated(std::chrono::system_clock::now());

    if (auto status = serve_http("--metrics-bind-address", options_.metrics_bind, metrics_routes(),
                                 metrics_listener_);
        !status) {
        return status;
    }
    if (auto status = serve_http("--healthz-bind-address", options_.healthz_bind, healthz_routes(),
                                 healthz_listener_);
        !status) {
        return status;
    }

    // DNS before the source: with a warm state it answers at once, while the
    // source's first state is read (docs/dns.md, "Warm start").
    if (auto status = dns_.start(node_state_ ? &*node_state_ : nullptr); !status) return status;

    if (!options_.source_file.empty()) {
        file_source_ = std::make_unique<watch::FileSource>(options_.source_file, store_);
        if (auto status = load_file_source(*file_source_); !status) return status;
        if (auto status = file_source_->start(); !status) {
            return make_error(ErrorCode::kIo,
                              fmt::format("--source: {}", status.error().describe()));
        }
    } else {
        auto source =
            watch::kube::KubeSource::create(kube_source_options(source_settings(options_)), store_);
        if (!source) {
            const auto& error = source.error();
            return make_error(error.code, fmt::format("--kubeconfig: {}", error.describe()));
        }
        kube_source_ = std::move(*source);
        kube_source_->start();
    }

    // Serving starts only now: the handlers read file_source_, kube_source_
    // and the DNS service, which are set above (connections wait in the
    // backlog).
    http_.start();
    // The file source marks the Store synced inside load(), before any
    // listener could see the nudge: check once here too.
    if (store_.snapshot()->synced() && !store_ready_.exchange(true)) on_store_ready();
    sync_.start();
    // Every listener that will be adopted is: the DNS server and the HTTP
    // servers bound above (health-check node ports open at the first sync,
    // and are bound afresh).
    listeners::SocketPool::process().close_unadopted();
    log::info("switchboard {} started: proxy mode {}, node {}, source {}{}", SWITCHBOARD_VERSION,
              to_string(options_.proxy_mode), options_.node_name,
              options_.source_file.empty() ? "kubernetes" : "file:", options_.source_file);
    return {};
}

Status Daemon::serve_http(const char* flag, const std::optional<HostPort>& address,
                          HttpRoutes routes, int& listener) {
    if (!address) return {};
    if (options_.bind_address_hard_fail) {
        auto id = http_.listen(*address, std::move(routes));
        if (!id) {
            return make_error(ErrorCode::kIo, fmt::format("{}: {} (--bind-address-hard-fail)", flag,
                                                          id.error().describe()));
        }
        listener = *id;
        return {};
    }
    // kube-proxy: a port that is taken must not stop the proxy; its server
    // is retried every 5 s. The first failure is logged at warn, the retries
    // at debug, so a port held for hours does not flood the log.
    listener = http_.listen_retrying(
        *address, std::move(routes), kBindRetryPeriod,
        [this, flag](const Error& error, unsigned attempt) {
            http_bind_failures_.inc();
            if (attempt == 1) {
                log::warn("{}: {}; retrying every {}s while the proxy runs", flag, error.describe(),
                          kBindRetryPeriod.count() / 1000);
            } else {
                log::debug("{}: attempt {}: {}", flag, attempt, error.describe());
            }
        },
        [flag, address](unsigned failures) {
            log::info("{}: listening on {} after {} failed attempts", flag, *address, failures);
        });
    return {};
}

void Daemon::stop() {
    // Sources first: nothing may call the Store listener once the rest stops.
    if (file_source_) file_source_->stop();
    if (kube_source_) kube_source_->stop();
    dns_.stop();
    sync_.stop();
    http_.stop();
    dns_.drop_coredns_endpoints();
}

void Daemon::stop_syncing() {
    sync_.stop();
    // The next daemon answers from the zone served now until its first sync
    // (docs/dns.md, "Warm start"); a failure is logged by DNS.
    if (auto* dns = dns_.service()) (void)dns->persist_state();
}

void Daemon::stop_serving() {
    dns_.stop();
    http_.stop();
}

void Daemon::on_store_changes(const std::vector<watch::Change>& changes) {
    sync_.on_store_changes(changes);
    // Store::set_synced notifies an empty batch: the initial state is in.
    if (changes.empty() && !store_ready_.load() && store_.snapshot()->synced() &&
        !store_ready_.exchange(true)) {
        on_store_ready();
    }
}

void Daemon::on_store_ready() {
    sync_.set_store_ready();
    // In-cluster only: a kubeconfig or --master names the server itself.
    if (!options_.source_file.empty() || !options_.kubeconfig.empty() || !options_.master.empty()) {
        return;
    }
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    if (auto warning = service_address_warning(*store_.snapshot(), host ? host : "")) {
        log::warn("{}", *warning);
    }
}

std::string Daemon::metrics_text() const {
    metrics::TextWriter out;
    sync_.write_metrics(out, build_info_);
    write_process_metrics(out, read_process_stats());
    metrics::write_metric(out,
                          metrics::Family{"switchboard_http_bind_failures_total",
                                          "Binds of the metrics and healthz servers that failed "
                                          "(each is retried)",
                                          metrics::Type::kCounter,
                                          {}},
                          http_bind_failures_);
    http_.append_metrics(out);
    if (file_source_) file_source_->append_metrics(out);
    if (kube_source_) kube_source_->append_metrics(out);
    if (auto* dns = dns_.service()) dns->append_metrics(out);
    return out.text();
}

void Daemon::lameduck(const std::function<bool()>& cut_short) const {
    dns_.lameduck(cut_short);
}

HttpRoutes Daemon::metrics_routes() {
    HttpRoutes routes;
    routes["/metrics"] = [this] {
        return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics_text(), {}};
    };
    routes["/debug/services"] = [this] {
        auto plan = sync_.last_plan();
        if (!plan) return text_response(503, "no plan computed yet\n");
        auto cached = debug_json_.get();
        if (!cached || cached->plan != plan) {
            cached = std::make_shared<const PlanJson>(PlanJson{plan, rules::plan_to_json(*plan)});
            debug_json_.publish(cached);
        }
        return HttpResponse{200, "application/json", cached->json, {}};
    };
    routes["/proxyMode"] = [this] { return text_response(200, to_string(options_.proxy_mode)); };
    // kube-proxy's metrics server has the generic /healthz ("ok") too.
    routes["/healthz"] = [] { return text_response(200, "ok"); };
    routes["/livez"] = [] { return text_response(200, "ok\n"); };
    // DNS's own readiness, apart from the proxy's /readyz (docs/dns.md).
    routes["/debug/dns"] = [this] {
        const dns::DnsService* dns = dns_.service();
        if (!dns) return text_response(404, "DNS is off (no --dns-listen)\n");
        return text_response(dns->serving() ? 200 : 503, dns->status_text());
    };
    routes["/readyz"] = [this] {
        return first_sync_done() ? text_response(200, "ok\n")
                                 : text_response(503, "waiting for the first sync\n");
    };
    return routes;
}

HttpRoutes Daemon::healthz_routes() {
    HttpRoutes routes;
    routes["/healthz"] = [this] {
        auto response = health_.healthz_response(std::chrono::system_clock::now());
        metrics_.count_healthz(response.status);
        return response;
    };
    // kube-proxy's /livez: /healthz without node eligibility.
    routes["/livez"] = [this] {
        auto response = health_.livez_response(std::chrono::system_clock::now());
        metrics_.count_livez(response.status);
        return response;
    };
    return routes;
}

uint16_t Daemon::metrics_port() const {
    return http_.port(metrics_listener_);
}
uint16_t Daemon::healthz_port() const {
    return http_.port(healthz_listener_);
}

}  // namespace sb::proxy
