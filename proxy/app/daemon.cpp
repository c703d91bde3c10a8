#include "proxy/app/daemon.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>

#include "base/log.h"
#include "dns/corefile/options.h"
#include "proxy/app/bootstrap_check.h"
#include "proxy/app/node_setup.h"
#include "proxy/app/source_state.h"
#include "proxy/http/process_metrics.h"
#include "proxy/options/flags.h"
#include "proxy/sync/planner.h"
#include "rules/dns_local/dns_local.h"
#include "rules/iptables/iptables_backend.h"
#include "rules/iptables/iptc.h"
#include "rules/ipvs/ipvs_backend.h"
#include "rules/kube_proxy_cleanup/kube_proxy_cleanup.h"
#include "rules/nftables/nftables_backend.h"
#include "rules/plan_json.h"

#ifndef SWITCHBOARD_VERSION
#define SWITCHBOARD_VERSION "unknown"
#endif

namespace sb::proxy {

namespace {

using Seconds = std::chrono::duration<double>;

double unix_seconds(std::chrono::system_clock::time_point time) {
    return Seconds(time.time_since_epoch()).count();
}

void print_error(const std::string& message) {
    std::fprintf(stderr, "switchboard: %s\n", message.c_str());
}

HttpResponse text_response(unsigned status, std::string body) {
    return HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

}  // namespace

int exit_code_for(const Error& error) {
    return error.code == ErrorCode::kInvalidArgument ? kExitUsage : kExitFailure;
}

Result<BackendFactory> backend_factory(ProxyMode mode) {
    if (mode == ProxyMode::kNftables) {
        return BackendFactory([](const rules::BackendOptions& options) {
            return rules::nftables::make_backend(options);
        });
    }
    if (mode == ProxyMode::kIptables) {
        return BackendFactory([](const rules::BackendOptions& options) {
            return rules::iptables::make_backend(options);
        });
    }
    return BackendFactory(
        [](const rules::BackendOptions& options) { return rules::ipvs::make_backend(options); });
}

ProxyMode mode_in_use(ProxyMode asked) {
    if (asked != ProxyMode::kIpvs || rules::ipvs::ipvs_available()) return asked;
    log::warn(
        "--proxy-mode=ipvs: this kernel has no IPVS (no ip_vs module); running in nftables "
        "mode");
    return ProxyMode::kNftables;
}

std::vector<Prefix> primary_node_prefixes(const watch::Snapshot& snapshot,
                                          const std::string& node_name) {
    std::vector<Prefix> prefixes;
    const watch::Node* node = snapshot.node(node_name);
    if (!node) return prefixes;
    bool have_v4 = false;
    bool have_v6 = false;
    for (const auto& address : node->addresses) {
        if (address.type != "InternalIP") continue;
        auto ip = IpAddress::parse(address.address);
        if (!ip) continue;
        bool& have = ip->is_v4() ? have_v4 : have_v6;
        if (have) continue;
        have = true;
        prefixes.emplace_back(*ip, ip->is_v4() ? 32 : 128);
    }
    return prefixes;
}

namespace {

// kube-proxy's nodeIPs (cmd/kube-proxy detectNodeIPs): per family the
// Node's first InternalIP, else its first ExternalIP; a specified
// --bind-address replaces its family's. Sorted by family (IPv4 first).
std::vector<IpAddress> node_ips(const watch::Snapshot& snapshot, const Options& options) {
    std::optional<IpAddress> by_family[2];
    auto slot = [](const IpAddress& ip) { return ip.is_v4() ? 0 : 1; };
    if (const watch::Node* node = snapshot.node(options.node_name)) {
        for (const char* type : {"InternalIP", "ExternalIP"}) {
            for (const auto& address : node->addresses) {
                auto ip = IpAddress::parse(address.address);
                if (address.type != type || !ip || by_family[slot(*ip)]) continue;
                by_family[slot(*ip)] = *ip;
            }
        }
    }
    if (!options.bind_address.is_unspecified()) {
        by_family[slot(options.bind_address)] = options.bind_address;
    }
    std::vector<IpAddress> ips;
    for (const auto& ip : by_family) {
        if (ip) ips.push_back(*ip);
    }
    return ips;
}

// The backend options with what comes from this Node resolved: its
// addresses (node_ips), --nodeport-addresses=primary, and
// --detect-local-mode=NodeCIDR (its spec.podCIDRs replace --cluster-cidr;
// none while the Node or its podCIDRs are unknown: kube-proxy's no-op
// detector, nothing is local by CIDR).
// Pure; log_resolution() reports what it could not resolve.
rules::BackendOptions resolved_backend_options(const Options& options,
                                               const watch::Snapshot& snapshot) {
    rules::BackendOptions backend = options.backend;
    backend.node_ips = node_ips(snapshot, options);
    if (options.nodeport_primary) {
        backend.nodeport_addresses = primary_node_prefixes(snapshot, options.node_name);
    }
    if (backend.local_detect_mode == rules::LocalDetectMode::kNodeCidr) {
        const watch::Node* node = snapshot.node(options.node_name);
        backend.cluster_cidrs = node ? node->pod_cidrs : std::vector<Prefix>{};
    }
    return backend;
}

// The options resolved_backend_options() takes from the Node differ: a backend
// built with `before` renders stale rules.
bool node_derived_options_differ(const rules::BackendOptions& before,
                                 const rules::BackendOptions& now) {
    return before.nodeport_addresses != now.nodeport_addresses ||
           before.cluster_cidrs != now.cluster_cidrs || before.node_ips != now.node_ips;
}

// Logged once per backend built from `backend`.
void log_resolution(const Options& options, const rules::BackendOptions& backend) {
    if (options.nodeport_primary && backend.nodeport_addresses.empty()) {
        log::warn(
            "--nodeport-addresses=primary: Node {} has no InternalIP (or is unknown); "
            "NodePorts answer on every local address",
            options.node_name);
    }
    if (backend.local_detect_mode != rules::LocalDetectMode::kNodeCidr) return;
    if (backend.cluster_cidrs.empty()) {
        log::warn(
            "--detect-local-mode=NodeCIDR: Node {} has no spec.podCIDRs (or is unknown); no "
            "traffic counts as local until it has",
            options.node_name);
        return;
    }
    std::string cidrs;
    for (const Prefix& p : backend.cluster_cidrs)
        cidrs += (cidrs.empty() ? "" : ",") + p.to_string();
    log::info("--detect-local-mode=NodeCIDR: local traffic comes from {}", cidrs);
}

bool serves_dns(const Options& options) {
    return !options.dns.listen.empty() || !options.dns_local_addresses.empty();
}

SourceSettings source_settings(const Options& options) {
    SourceSettings settings;
    settings.source_file = options.source_file;
    settings.kubeconfig = options.kubeconfig;
    settings.master = options.master;
    settings.node_name = options.node_name;
    // The search path needs this node's Pods (docs/dns.md, "Search path on
    // the server"); without it nothing reads them, and the RBAC grant for
    // Pods is not needed.
    settings.watch_pods = options.dns.autopath && serves_dns(options);
    return settings;
}

watch::kube::KubeSourceOptions kube_options(const Options& options) {
    return kube_source_options(source_settings(options));
}

// The node-local DNS link, addresses and notrack table (docs/dns.md). DNS
// fails alone: a refusal is logged and the proxy goes on; the next full sync
// retries. Called from start() and then from the sync runner's thread only.
void ensure_dns_local_addresses(const std::vector<IpAddress>& addresses) {
    if (addresses.empty()) return;
    if (auto status = rules::dns_local::apply(addresses); !status) {
        log::warn("--dns-local-address: {}", status.error().describe());
    }
}

}  // namespace

Daemon::Daemon(Options options, BackendFactory backend_factory)
    : options_(std::move(options)),
      backend_factory_(std::move(backend_factory)),
      build_info_(current_build_info(SWITCHBOARD_VERSION)),
      metrics_(options_.proxy_mode),
      // kube-proxy: unhealthy once an update waits 2 x syncPeriod.
      health_(2 * options_.sync_period),
      tracker_(options_.node_name, std::chrono::system_clock::now()),
      health_ports_(http_,
                    [this] { return health_.check(std::chrono::system_clock::now()).healthy; }),
      runner_(
          SyncTiming{options_.min_sync_period, options_.sync_period, std::chrono::seconds(1)},
          [this](bool full) { return sync(full); }, clock_) {
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

    if (!options_.source_file.empty()) {
        file_source_ = std::make_unique<watch::FileSource>(options_.source_file, store_);
        if (auto status = load_file_source(*file_source_); !status) return status;
        if (auto status = file_source_->start(); !status) {
            return make_error(ErrorCode::kIo, "--source: " + status.error().describe());
        }
    } else {
        auto source = watch::kube::KubeSource::create(kube_options(options_), store_);
        if (!source) {
            const auto& error = source.error();
            return make_error(error.code, "--kubeconfig: " + error.describe());
        }
        kube_source_ = std::move(*source);
        kube_source_->start();
    }

    // Before the DNS listeners, which bind the node-local addresses too.
    ensure_dns_local_addresses(options_.dns_local_addresses);
    dns::DnsOptions dns = with_node_parts(options_.dns);
    if (!dns.listen.empty()) {
        // A DNS listener that cannot bind is retried on DNS's own thread
        // (docs/dns.md): it never stops the proxy. Only set-up errors end here.
        auto service = dns::DnsService::start(dns, store_);
        if (!service) {
            return make_error(ErrorCode::kIo, "--dns-listen: " + service.error().describe());
        }
        dns_ = std::move(*service);
    }
    replace_coredns_endpoints(coredns_endpoints_config(options_.dns_corefile_config));
    if (auto reload = reload_config(options_.dns_corefile_config)) {
        const Environment environment = current_environment();
        reloader_ = std::make_unique<CorefileReloader>(
            options_.dns_corefile, options_.dns_corefile_text, *reload, environment.lookup_env,
            environment.read_file,
            [this](const std::string& text) { return apply_reloaded_corefile(text); });
        reloader_->start();
    }

    // Serving starts only now: the handlers read file_source_, kube_source_
    // and dns_, which are set above (connections wait in the backlog).
    http_.start();
    // The file source marks the Store synced inside load(), before any
    // listener could see the nudge: check once here too.
    if (store_.snapshot()->synced() && !store_ready_.exchange(true)) on_store_ready();
    runner_.start();
    log::info("switchboard {} started: proxy mode {}, node {}, source {}", SWITCHBOARD_VERSION,
              to_string(options_.proxy_mode), options_.node_name,
              options_.source_file.empty() ? "kubernetes" : "file:" + options_.source_file);
    return {};
}

Status Daemon::serve_http(const char* flag, const std::optional<HostPort>& address,
                          HttpRoutes routes, int& listener) {
    if (!address) return {};
    if (options_.bind_address_hard_fail) {
        auto id = http_.listen(*address, std::move(routes));
        if (!id) {
            return make_error(ErrorCode::kIo, std::string(flag) + ": " + id.error().describe() +
                                                  " (--bind-address-hard-fail)");
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
            log::info("{}: listening on {} after {} failed attempts", flag, address->to_string(),
                      failures);
        });
    return {};
}

void Daemon::stop() {
    // Sources first: nothing may call the Store listener once the rest stops.
    if (file_source_) file_source_->stop();
    if (kube_source_) kube_source_->stop();
    // Before DNS: a reload under way reconfigures it.
    if (reloader_) reloader_->stop();
    if (dns_) dns_->stop();
    runner_.stop();
    http_.stop();
    std::lock_guard lock(coredns_mutex_);
    coredns_.reset();
    retired_coredns_.clear();
}

dns::DnsOptions Daemon::with_node_parts(dns::DnsOptions dns) const {
    for (const IpAddress& address : options_.dns_local_addresses) {
        dns.listen.push_back(HostPort{address, rules::dns_local::kDnsPort});
    }
    // This process programs the node's Services: their names wait for the
    // rules (docs/dns.md, "Publish after programming").
    dns.publish_after_programming = true;
    dns.local_dns_addresses = options_.dns_local_addresses;
    dns.node_name = options_.node_name;  // the search path's Pods are this node's
    return dns;
}

Result<std::optional<dns::ReloadConfig>> Daemon::apply_reloaded_corefile(const std::string& text) {
    dns::DnsOptions next = options_.dns_flags;
    dns::CorefileConfig typed;
    auto warnings =
        dns::apply_corefile(text, options_.dns_corefile, current_environment().lookup_env, next,
                            !options_.dns_local_addresses.empty(), &typed);
    if (!warnings) return warnings.error();
    for (const auto& warning : *warnings) log::warn("{}", warning);
    next = with_node_parts(std::move(next));
    if (next.autopath && options_.source_file.empty() && !kube_options(options_).watch_pods) {
        log::warn(
            "{}: autopath @kubernetes needs this node's Pods, which are watched from the "
            "next restart; until then every client gets plain answers",
            options_.dns_corefile);
    }
    if (dns_) {
        if (auto status = dns_->reconfigure(std::move(next)); !status) {
            return make_error(status.error().code,
                              options_.dns_corefile + ": " + status.error().describe());
        }
    } else if (!next.listen.empty()) {
        log::warn("{}: DNS was off at start; it starts serving at the next restart",
                  options_.dns_corefile);
    }
    replace_coredns_endpoints(coredns_endpoints_config(typed));
    return reload_config(typed);
}

void Daemon::replace_coredns_endpoints(CorednsEndpointsConfig config) {
    std::lock_guard lock(coredns_mutex_);
    if (coredns_ ? coredns_->config() == config : config.empty()) return;
    if (coredns_) {
        // Closed first: the new listeners may take the same ports.
        coredns_->close();
        retired_coredns_.push_back(std::move(coredns_));
    }
    if (config.empty()) return;
    coredns_ = std::make_shared<CorednsEndpoints>(
        http_, std::move(config),
        CorednsEndpoints::Probes{[this] { return store_.snapshot()->synced(); },
                                 [this] { return dns_ && dns_->serving(); },
                                 [this] { return coredns_metrics_text(); }});
}

void Daemon::on_store_changes(const std::vector<watch::Change>& changes) {
    for (const auto& change : changes) {
        if (change.kind == watch::Kind::kService) metrics_.service_changes.inc();
        if (change.kind == watch::Kind::kEndpointSlice) metrics_.endpoint_changes.inc();
    }
    if (tracker_.record(changes)) {
        auto now = std::chrono::system_clock::now();
        health_.queued(now);
        metrics_.queued(unix_seconds(now));
        runner_.request();
    }
    // Store::set_synced notifies an empty batch: the initial state is in.
    if (changes.empty() && !store_ready_.load() && store_.snapshot()->synced() &&
        !store_ready_.exchange(true)) {
        on_store_ready();
    }
}

void Daemon::on_store_ready() {
    runner_.set_ready();
    // In-cluster only: a kubeconfig or --master names the server itself.
    if (!options_.source_file.empty() || !options_.kubeconfig.empty() || !options_.master.empty()) {
        return;
    }
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    if (auto warning = service_address_warning(*store_.snapshot(), host ? host : "")) {
        log::warn("{}", *warning);
    }
}

Daemon::Planned Daemon::compute_plan(bool full) {
    const PlannerOptions planner{options_.node_name, options_.dns_local_addresses};
    const bool replan_all = full || !computed_;
    auto batch = tracker_.take(store_, replan_all);
    const watch::Snapshot& snapshot = *batch.snapshot;
    if (replan_all || batch.node_changed) {
        return {std::make_shared<const rules::Plan>(build_plan(snapshot, planner, computed_.get())),
                batch.snapshot, std::move(batch.trigger_times)};
    }
    if (batch.services.empty()) return {computed_, batch.snapshot, std::move(batch.trigger_times)};
    return {std::make_shared<const rules::Plan>(
                apply_incremental(*computed_, batch.services, snapshot, planner)),
            batch.snapshot, std::move(batch.trigger_times)};
}

void Daemon::record_plan_metrics(const rules::Plan& plan,
                                 const std::optional<std::vector<rules::PortChange>>& changes) {
    if (changes) {
        no_local_endpoints_.apply(*changes);
    } else {
        no_local_endpoints_.reset(plan);
    }
    // Per family, as each of kube-proxy's per-family proxiers counts.
    for (IpFamily family : kIpFamilies) {
        metrics_.set_no_local_endpoints(family, no_local_endpoints_.internal(family),
                                        no_local_endpoints_.external(family));
    }
    metrics_.plan_service_ports.set(static_cast<double>(plan.services.size()));
}

void Daemon::update_health_ports(const rules::Plan& plan,
                                 const std::optional<std::vector<rules::PortChange>>& changes) {
    // Only a port with a health-check node port (before or after) can change
    // what the health-check servers answer; the addresses change only with
    // a new backend, which comes without `changes`.
    auto health_checked = [](const rules::PortChange& change) {
        return (change.first && change.first->health_check_node_port != 0) ||
               (change.second && change.second->health_check_node_port != 0);
    };
    if (changes && !retry_health_ports_ &&
        std::none_of(changes->begin(), changes->end(), health_checked)) {
        return;
    }
    const size_t failed = health_ports_.update(plan, health_check_addresses_);
    if (failed > 0) metrics_.health_check_errors.inc(failed);
    retry_health_ports_ = failed > 0;
}

// At most this many EndpointSlice trigger times wait for an accepted sync.
constexpr size_t kMaxUnobservedTriggerTimes = 100'000;

void Daemon::observe_network_programming(std::chrono::system_clock::time_point now) {
    for (const auto& trigger : unobserved_trigger_times_) {
        metrics_.observe_network_programming(Seconds(now - trigger).count());
    }
    unobserved_trigger_times_.clear();
}

Status Daemon::sync(bool full) {
    const auto started = std::chrono::steady_clock::now();
    if (full) ensure_dns_local_addresses(options_.dns_local_addresses);  // drift repair
    auto [plan, snapshot, trigger_times] = compute_plan(full);
    // Kept until the kernel has a plan that includes them (a failed sync is
    // retried in full, whose batch no longer lists these slices). Bounded:
    // while syncs keep failing, EndpointSlice churn must not grow memory;
    // past the bound the newest are not observed (the oldest are the ones
    // the latency is about).
    const size_t room = kMaxUnobservedTriggerTimes -
                        std::min(kMaxUnobservedTriggerTimes, unobserved_trigger_times_.size());
    unobserved_trigger_times_.insert(
        unobserved_trigger_times_.end(), trigger_times.begin(),
        trigger_times.begin() + static_cast<std::ptrdiff_t>(std::min(room, trigger_times.size())));
    health_.set_node(snapshot->node(options_.node_name));
    const bool unchanged = !full && plan == computed_ && plan == applied_;
    // The ports that changed since the plan computed before this one, when
    // this one was derived from it; nullopt after a full plan (everything is
    // looked at again).
    std::optional<std::vector<rules::PortChange>> changes;
    if (computed_ && plan == computed_) {
        changes.emplace();
    } else if (computed_ && plan->changes && plan->changes->base_revision == computed_->revision) {
        changes = rules::changed_ports(*computed_, *plan);
    }
    computed_ = plan;
    {
        std::lock_guard lock(published_mutex_);
        published_ = plan;
    }
    // A backend renders the options it was made with, resolved from this
    // Node (--nodeport-addresses=primary, --detect-local-mode=NodeCIDR): the
    // first sync makes one, and when the Node's part changes (podCIDRs
    // assigned, primary address known) a new one takes over with a full
    // sync. The health-check node ports follow the same addresses.
    rules::BackendOptions wanted = resolved_backend_options(options_, *snapshot);
    bool fresh_backend = false;
    if (!backend_ || node_derived_options_differ(backend_options_, wanted)) {
        log_resolution(options_, wanted);
        health_check_addresses_ =
            health_check_addresses(wanted.nodeport_addresses, interface_addresses());
        backend_ = backend_factory_(wanted);
        backend_options_ = std::move(wanted);
        fresh_backend = true;
    }
    if (fresh_backend) changes.reset();  // new health-check addresses
    // The plan's metrics and health-check ports come after the kernel's
    // part, which the network programming latency is about (kube-proxy too
    // updates its health-check servers after restoring the rules). They
    // follow the computed plan whether or not the kernel accepted it.
    auto follow_plan = [&] {
        record_plan_metrics(*plan, changes);
        update_health_ports(*plan, changes);
    };
    if (unchanged && !fresh_backend && !sync_unchanged_plan_) {
        follow_plan();
        // The kernel already has this plan: the changes are programmed.
        const auto now = std::chrono::system_clock::now();
        observe_network_programming(now);
        health_.updated(now);
        return {};
    }
    const rules::Plan* previous = full || fresh_backend ? nullptr : applied_.get();
    // Names go before their rules: what this sync may remove is withdrawn
    // from DNS first, whatever the sync then does.
    if (dns_) {
        if (auto withdrawn = programmed_names_.before_sync(*plan); !withdrawn.empty()) {
            dns_->report_programmed(withdrawn);
        }
    }
    auto result = backend_->sync(*plan, previous);
    const double seconds = Seconds(std::chrono::steady_clock::now() - started).count();
    follow_plan();
    if (!result) {
        metrics_.count_sync_failure(previous != nullptr);
        // Nothing new is published; the first failure still releases the
        // zone, so that names without rules to wait for are served.
        if (dns_) dns_->report_programmed({});
        return result.error();
    }
    applied_ = plan;
    // Names come after their rules.
    if (dns_) dns_->report_programmed(programmed_names_.after_sync(*plan));
    // A failed conntrack reconcile, or real servers left draining, need a
    // sync even if nothing changes meanwhile.
    sync_unchanged_plan_ = backend_metrics_.record(*result) || result->draining_real_servers > 0;
    for (const rules::ConntrackReconcile& r : result->conntrack) {
        if (!r.ok) log::warn("UDP conntrack reconcile failed (retried next sync): {}", r.error);
    }
    const auto now = std::chrono::system_clock::now();
    metrics_.observe_sync(seconds, full, unix_seconds(now));
    observe_network_programming(now);
    health_.updated(now);
    log::debug("synced {} service ports ({}, {} objects) in {:.3f}s", plan->services.size(),
               full ? "full" : "partial", result->objects_sent, seconds);
    return {};
}

std::shared_ptr<const rules::Plan> Daemon::last_plan() const {
    std::lock_guard lock(published_mutex_);
    return published_;
}

std::string Daemon::metrics_text() const {
    metrics::TextWriter out;
    metrics_.write(out, build_info_, tracker_.pending());
    backend_metrics_.write(out);
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
    if (dns_) dns_->append_metrics(out);
    return out.text();
}

std::string Daemon::coredns_metrics_text() const {
    metrics::TextWriter out;
    write_coredns_build_info(out, build_info_);
    if (dns_) dns_->append_metrics(out);
    if (reloader_) reloader_->append_metrics(out);
    write_process_metrics(out, read_process_stats());
    return out.text();
}

void Daemon::lameduck() const {
    std::shared_ptr<CorednsEndpoints> endpoints;
    {
        std::lock_guard lock(coredns_mutex_);
        endpoints = coredns_;
    }
    if (endpoints) endpoints->lameduck();  // sleeps: not under the lock
}

HttpRoutes Daemon::metrics_routes() {
    HttpRoutes routes;
    routes["/metrics"] = [this] {
        return HttpResponse{200, "text/plain; version=0.0.4; charset=utf-8", metrics_text(), {}};
    };
    routes["/debug/services"] = [this] {
        auto plan = last_plan();
        if (!plan) return text_response(503, "no plan computed yet\n");
        // The JSON of a 10k-Service plan takes ~0.2 s to write: once per plan.
        std::lock_guard lock(debug_json_mutex_);
        if (debug_json_plan_ != plan) {
            debug_json_ = rules::plan_to_json(*plan);
            debug_json_plan_ = plan;
        }
        return HttpResponse{200, "application/json", debug_json_, {}};
    };
    routes["/proxyMode"] = [this] { return text_response(200, to_string(options_.proxy_mode)); };
    // kube-proxy's metrics server has the generic /healthz ("ok") too.
    routes["/healthz"] = [] { return text_response(200, "ok"); };
    routes["/livez"] = [] { return text_response(200, "ok\n"); };
    // DNS's own readiness, apart from the proxy's /readyz (docs/dns.md).
    routes["/debug/dns"] = [this] {
        if (!dns_) return text_response(404, "DNS is off (no --dns-listen)\n");
        return text_response(dns_->serving() ? 200 : 503, dns_->status_text());
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

namespace {

// Waits until `done()` or a blocked SIGINT/SIGTERM arrives; true when done.
int fail(const Error& error) {
    print_error(error.describe());
    return exit_code_for(error);
}

int run_plan(const Options& options) {
    auto state = load_state(source_settings(options));
    if (!state) return fail(state.error());
    auto plan = build_plan(*state->store->snapshot(),
                           PlannerOptions{options.node_name, options.dns_local_addresses});
    std::cout << rules::plan_to_json(plan) << std::flush;
    return kExitOk;
}

int run_dry_run(const Options& options, const BackendFactory& factory) {
    auto state = load_state(source_settings(options));
    if (!state) return fail(state.error());
    auto snapshot = state->store->snapshot();
    auto plan =
        build_plan(*snapshot, PlannerOptions{options.node_name, options.dns_local_addresses});
    const rules::BackendOptions backend_options = resolved_backend_options(options, *snapshot);
    log_resolution(options, backend_options);
    auto backend = factory(backend_options);
    auto text = backend->render_text(plan);
    if (!text) return fail(make_error(ErrorCode::kInternal, text.error().describe()));
    std::cout << *text << std::flush;
    return kExitOk;
}

int run_cleanup(const Options& options) {
    // kube-proxy --cleanup removes the rules of every mode, whatever
    // --proxy-mode says; modes not built yet own nothing to remove.
    int code = kExitOk;
    for (ProxyMode mode : {ProxyMode::kNftables, ProxyMode::kIptables, ProxyMode::kIpvs}) {
        auto factory = backend_factory(mode);
        if (!factory) continue;
        auto backend = (*factory)(options.backend);
        if (auto status = backend->cleanup(); !status) {
            print_error(std::string("--cleanup: ") + to_string(mode) + ": " +
                        status.error().describe());
            code = kExitFailure;
        }
    }
    // Whatever --dns-local-address says now: an earlier run may have made them.
    if (auto status = rules::dns_local::cleanup(); !status) {
        print_error("--cleanup: --dns-local-address: " + status.error().describe());
        code = kExitFailure;
    }
    return code;
}

}  // namespace

int run(const Options& options) {
    if (options.command == Command::kPlan) return run_plan(options);
    if (options.cleanup_kube_proxy) {
        const std::unique_ptr<rules::iptables::Xtables> legacy =
            rules::iptables::make_libiptc_xtables();
        auto removed = rules::kube_proxy_cleanup::remove_kube_proxy_leftovers(*legacy);
        if (!removed) {
            return fail(make_error(removed.error().code,
                                   "--cleanup-kube-proxy: " + removed.error().message));
        }
        log::info("--cleanup-kube-proxy: {}", rules::kube_proxy_cleanup::describe(*removed));
        if (!options.cleanup) return kExitOk;
    }
    if (options.cleanup) return run_cleanup(options);
    if (options.dry_run) {
        // What the asked mode would program, whether or not this kernel
        // could take it.
        auto factory = backend_factory(options.proxy_mode);
        if (!factory) return fail(factory.error());
        return run_dry_run(options, *factory);
    }
    Options in_use = options;
    in_use.proxy_mode = mode_in_use(options.proxy_mode);
    auto factory = backend_factory(in_use.proxy_mode);
    if (!factory) return fail(factory.error());

    // kube-proxy's start-up node settings; --init-only stops after them.
    // The daemon applies them once it has started, so that a bad flag or
    // source is still reported as its one line.
    auto apply_settings = [&options] {
        for (const auto& warning : apply_node_settings(options, KernelPaths{})) {
            log::warn("{}", warning);
        }
    };
    if (options.init_only) {
        apply_settings();
        return kExitOk;
    }

    // Without --dns-local-address, a link and notrack table left by an earlier
    // run with it would keep the kube-dns ClusterIP local and untracked (so
    // never DNATed) with nothing answering: removing the flag is the rollback.
    if (options.dns_local_addresses.empty()) {
        if (auto status = rules::dns_local::cleanup(); !status) {
            log::warn("removing the node-local DNS addresses of an earlier run: {}",
                      status.error().describe());
        }
    }
    Daemon daemon(in_use, *factory);
    if (auto status = daemon.start(); !status) {
        daemon.stop();
        return fail(status.error());
    }
    apply_settings();
    wait_unless_signalled([] { return false; });
    daemon.lameduck();
    daemon.stop();
    return kExitOk;
}

}  // namespace sb::proxy
