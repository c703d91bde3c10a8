#include "proxy/app/proxy_sync.h"

#include <algorithm>

#include "base/log.h"
#include "proxy/app/dns_wiring.h"
#include "proxy/sync/planner.h"

namespace sb::proxy {

namespace {

using Seconds = std::chrono::duration<double>;

double unix_seconds(std::chrono::system_clock::time_point time) {
    return Seconds(time.time_since_epoch()).count();
}

// At most this many EndpointSlice trigger times wait for an accepted sync.
constexpr size_t kMaxUnobservedTriggerTimes = 100'000;

}  // namespace

ProxySync::ProxySync(const Options& options, BackendFactory backend_factory,
                     const watch::Store& store, HttpServer& http, ProxyMetrics& metrics,
                     ProxierHealth& health, const DnsWiring& dns)
    : options_(options),
      backend_factory_(std::move(backend_factory)),
      store_(store),
      metrics_(metrics),
      health_(health),
      dns_(dns),
      backend_metrics_(options.proxy_mode == ProxyMode::kIptables),
      tracker_(options_.node_name, std::chrono::system_clock::now()),
      health_ports_(http,
                    [this] { return health_.check(std::chrono::system_clock::now()).healthy; }),
      runner_(
          SyncTiming{options_.min_sync_period, options_.sync_period, std::chrono::seconds(1),
                     options_.full_sync_period},
          [this](SyncKind kind) { return sync(kind); }, clock_) {}

void ProxySync::on_store_changes(const std::vector<watch::Change>& changes) {
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
}

void ProxySync::set_store_ready() {
    runner_.set_ready();
}

void ProxySync::start() {
    runner_.start();
}

void ProxySync::stop() {
    runner_.stop();
}

bool ProxySync::first_sync_done() const {
    return runner_.ever_succeeded();
}

std::shared_ptr<const rules::Plan> ProxySync::last_plan() const {
    return published_.get();
}

void ProxySync::write_metrics(metrics::TextWriter& out, const BuildInfo& build_info) const {
    metrics_.write(out, build_info, tracker_.pending());
    backend_metrics_.write(out);
}

ProxySync::Planned ProxySync::compute_plan(bool full) {
    const PlannerOptions planner{options_.node_name, options_.dns_local_addresses};
    const bool replan_all = full || !computed_;
    auto batch = tracker_.take(store_, replan_all);
    const watch::Snapshot& snapshot = *batch.snapshot;
    if (replan_all || batch.node_changed) {
        return {std::make_shared<const rules::Plan>(build_plan(snapshot, planner, computed_.get())),
                batch.snapshot, std::move(batch.trigger_times)};
    }
    if (batch.services.empty() && !batch.service_cidrs_changed) {
        return {computed_, batch.snapshot, std::move(batch.trigger_times)};
    }
    return {std::make_shared<const rules::Plan>(
                apply_incremental(*computed_, batch.services, snapshot, planner)),
            batch.snapshot, std::move(batch.trigger_times)};
}

void ProxySync::record_plan_metrics(const rules::Plan& plan,
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

void ProxySync::update_health_ports(const rules::Plan& plan,
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

void ProxySync::observe_network_programming(std::chrono::system_clock::time_point now) {
    for (const auto& trigger : unobserved_trigger_times_) {
        metrics_.observe_network_programming(Seconds(now - trigger).count());
    }
    unobserved_trigger_times_.clear();
}

bool ProxySync::kernel_drifted() {
    if (!backend_) return false;  // the first sync is full anyway
    auto intact = backend_->kernel_intact();
    if (intact && intact.value()) return false;
    if (!intact) {
        log::warn("{}: the periodic check of the kernel failed ({}); syncing in full",
                  backend_->name(), intact.error().describe());
    } else {
        log::warn(
            "{}: switchboard's kernel objects were removed or replaced by someone else; "
            "syncing in full",
            backend_->name());
    }
    metrics_.kernel_drift.inc();
    return true;
}

Status ProxySync::sync(SyncKind kind) {
    const auto started = std::chrono::steady_clock::now();
    // Drift repair: the node-local DNS addresses, and the backend's cheap
    // check (a full sync repairs everything, but costs seconds at 50k
    // Services, so it runs hourly: sync_runner.h).
    if (kind != SyncKind::kPartial) dns_.ensure_local_addresses();
    const bool full = kind == SyncKind::kFull || (kind == SyncKind::kPeriodic && kernel_drifted());
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
    published_.publish(plan);
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
    dns::DnsService* dns = dns_.service();
    // Names go before their rules: what this sync may remove is withdrawn
    // from DNS first, whatever the sync then does.
    if (dns) {
        if (auto withdrawn = programmed_names_.before_sync(*plan); !withdrawn.empty()) {
            dns->report_programmed(withdrawn);
        }
    }
    auto result = backend_->sync(*plan, previous);
    const double seconds = Seconds(std::chrono::steady_clock::now() - started).count();
    follow_plan();
    if (!result) {
        metrics_.count_sync_failure(previous != nullptr);
        // Nothing new is published; the first failure still releases the
        // zone, so that names without rules to wait for are served.
        if (dns) dns->report_programmed({});
        return result.error();
    }
    applied_ = plan;
    // Names come after their rules.
    if (dns) dns->report_programmed(programmed_names_.after_sync(*plan));
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

}  // namespace sb::proxy
