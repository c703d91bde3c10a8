#include "dns/dns_service.h"

#include <sched.h>
#include <time.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <thread>
#include <utility>

#include "base/log.h"
#include "base/threads/panic_guard.h"
#include "base/threads/thread_name.h"
#include "dns/forward/cache_set.h"
#include "dns/forward/forward.h"
#include "dns/search_path/pod_directory.h"
#include "dns/search_path/resolv_conf.h"
#include "dns/serve/server.h"
#include "dns/zone/hosts_reloader.h"
#include "dns/zone/programming_latency.h"
#include "dns/zone/warm_state.h"
#include "dns/zone/zone.h"

namespace sb::dns {

namespace {

// How long the zone builder waits for a burst of Store changes to settle,
// and the most it delays a rebuild while changes keep coming.
constexpr auto kCoalesceQuiet = std::chrono::milliseconds(20);
constexpr auto kCoalesceMax = std::chrono::milliseconds(200);

// A replaced engine: how long a serving thread may still be starting a
// forward with it (a batch begun before the swap), and the most its forwards
// are waited for (the forwarder's attempts end well before).
constexpr auto kRetireGrace = std::chrono::milliseconds(200);
constexpr auto kRetireTimeout = std::chrono::seconds(10);
// How long the listeners a reload replaced go on serving next to the new
// ones: longer than a forward's attempts (3 x 1 s), so those complete.
constexpr auto kListenDrain = std::chrono::milliseconds(3500);
// How long after a synced zone is published the warm state's file is
// rewritten: a burst of zones costs one write, and a crash loses at most
// this much of the zone (docs/dns.md, "Warm start").
constexpr auto kStateWriteDelay = std::chrono::seconds(1);
// ...and no sooner after the last write than this many times the CPU time it
// took (its pauses for changes excluded): a write costs what the zone holds
// (1-2 s of a core at 50k Services),
// and rewriting it every second under a stream of changes took most of the
// CPU the syncs needed (issue 26). The file then lags by at most 2% of the
// time, and stop and hand-over write it fresh anyway.
constexpr int kStateWriteCostFactor = 50;
// A background write of the warm state leaves the CPU to the change that
// came last: each of its 64 KiB pieces waits until this long after the
// Store's last change, so no longer than this (docs/dns.md, "Warm start").
constexpr auto kStateWriteQuiet = std::chrono::milliseconds(50);

// The CPUs this process may run on (its affinity mask, as Go's runtime
// sizes GOMAXPROCS for CoreDNS): a Pod pinned to CPUs by the kubelet's
// static CPU manager gets that many workers, not one per core of the node.
unsigned usable_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
        if (int count = CPU_COUNT(&set); count > 0) return static_cast<unsigned>(count);
    }
    return std::max(1u, std::thread::hardware_concurrency());
}

// The CPU time the calling thread has used.
std::chrono::nanoseconds thread_cpu_time() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

std::string listen_names(const std::vector<ListenerState>& listeners) {
    std::vector<std::string> names;
    for (const auto& listener : listeners) names.push_back(listener.name());
    return fmt::format("{}", fmt::join(names, ", "));
}

ZoneConfig zone_config_for(const DnsOptions& options) {
    ZoneConfig config;
    config.domain = options.cluster_domain;
    config.ttl = options.ttl;
    config.pods = options.pods;
    config.endpoint_pod_names = options.endpoint_pod_names;
    config.endpoints = options.endpoints;
    config.publish_after_programming = options.publish_after_programming;
    config.local_dns_addresses = options.local_dns_addresses;
    return config;
}

struct BuiltEngine {
    std::shared_ptr<QueryEngine> engine;
    size_t upstreams = 0;  // the default set's
};

// The forwarder (started), cache and query log `options` ask for: no
// forwarder and no cache when there is no upstream at all.
Result<BuiltEngine> build_engine(const DnsOptions& options) {
    BuiltEngine built{std::make_shared<QueryEngine>(), 0};
    QueryEngine& engine = *built.engine;
    engine.query_log = options.query_log;
    engine.cluster = options.cluster;
    engine.shuffle = options.shuffle;
    engine.autopath.enabled = options.autopath;
    if (options.autopath) {
        for (const auto& search : resolv_conf_searches(options.resolv_conf)) {
            // parse_resolv_conf_searches keeps DNS names only.
            if (auto wire = name_from_text(search)) engine.autopath.node_searches.push_back(*wire);
        }
    }
    std::vector<HostPort> upstreams = options.upstreams;
    if (upstreams.empty()) upstreams = resolv_conf_nameservers(options.resolv_conf);
    built.upstreams = upstreams.size();
    bool stub_upstreams = std::any_of(options.stubs.begin(), options.stubs.end(),
                                      [](const StubZone& stub) { return !stub.upstreams.empty(); });
    if (!upstreams.empty() || stub_upstreams) {
        ForwarderOptions forward_options;
        forward_options.upstreams = upstreams;
        forward_options.options = options.forward;
        forward_options.stubs = options.stubs;
        engine.forwarder = std::make_unique<Forwarder>(forward_options);
        engine.forwarder->drop_self(options.listen);
        if (auto status = engine.forwarder->start(); !status) return status.error();
        engine.caches = options.caches ? std::make_unique<CacheSet>(*options.caches)
                                       : CacheSet::flags_default();
    } else {
        log::info("dns: no upstream nameserver: names outside {} are refused",
                  options.cluster_domain);
    }
    return built;
}

}  // namespace

// Rebuilds the zone on its own thread after Store changes. The Store's
// listener holds only a weak reference, since the Store cannot unsubscribe.
struct ZoneBuilder {
    std::mutex mutex;
    std::condition_variable cv;
    bool dirty = true;
    bool stopping = false;
    // The changes since the builder last took them: the next rebuild
    // derives the zone from the last one for these keys only.
    std::vector<watch::Change> pending;
    // The next rebuild is a full one: changes were made before the Store
    // listener existed, so `pending` does not name them.
    bool full = false;
    std::chrono::steady_clock::time_point first_change;
    std::chrono::steady_clock::time_point last_change;
};

// When the warm state's file is rewritten next, by its own thread.
struct StateWriteSchedule {
    std::mutex mutex;
    std::condition_variable cv;
    bool stopping = false;
    // The next write (none due: nullopt).
    std::optional<std::chrono::steady_clock::time_point> due;
    // No write is due before this: the last one's end plus
    // kStateWriteCostFactor times its CPU time.
    std::chrono::steady_clock::time_point earliest{};
};

struct DnsService::Impl {
    std::mutex reconfigure_mutex;  // one reconfigure() at a time; guards options
    DnsOptions options;            // what serves now
    watch::Store* store = nullptr;
    // Serialises rebuilds (the builder thread's and a reconfigure's), so that
    // the zone published last is built with the newest zone_config.
    std::mutex zone_mutex;
    ZoneConfig zone_config;  // guarded by zone_mutex
    // The zone published last (guarded by zone_mutex): the base of the
    // next incremental rebuild.
    std::shared_ptr<const Zone> last_zone;
    // What the proxy reported programmed, and the Services whose state
    // changed since the last rebuild (both guarded by zone_mutex).
    ProgrammedServices programmed;
    std::vector<watch::Change> reprogrammed;
    std::atomic<uint64_t> programmed_reports{0};
    std::atomic<uint64_t> programmed_count{0};  // programmed.size(), for the metrics
    ZoneHolder zones;
    HostsHolder hosts;
    // This node's Pods for the search path, rebuilt by publish_pods().
    PodDirectoryHolder pods;
    std::string node_name;  // the options' at start
    std::unique_ptr<HostsReloader> hosts_reloader;
    std::shared_ptr<ZoneBuilder> builder = std::make_shared<ZoneBuilder>();
    std::thread builder_thread;
    StateWriteSchedule state_writes;
    std::thread state_writer_thread;  // with a warm state's file only
    EngineHolder engines;
    std::unique_ptr<ResponseRateLimiter> rrl;  // --dns-rrl; null: off
    // The server on the current listen addresses; a reload that changes them
    // replaces it (reconfigure). Readers take it with current_server().
    mutable std::mutex server_mutex;
    std::shared_ptr<Server> server;  // guarded by server_mutex
    // Servers replaced by a reload, stopped: kept until stop(), since the
    // forwarder may still post a reply into their workers' inboxes. Guarded
    // by reconfigure_mutex.
    std::vector<std::shared_ptr<Server>> replaced_servers;
    unsigned default_workers = 1;
    // Shared with the Store's listener, which may outlive the service.
    std::shared_ptr<ProgrammingLatency> latency =
        std::make_shared<ProgrammingLatency>(std::chrono::system_clock::now());
    std::atomic<uint64_t> rebuilds{0};
    std::atomic<uint64_t> zone_names{0};
    std::atomic<uint64_t> zone_serial{0};
    // The warm state's file (null: none), and whether the zone published is
    // the one read from it; while it is, a zone that is not synced yet is
    // built but not published (guarded by zone_mutex; the atomic for the
    // metrics).
    std::unique_ptr<WarmStateFile> state_file;
    bool answering_warm = false;
    std::atomic<bool> answering_warm_metric{false};
    std::atomic<bool> state_write_failing{false};  // for one line per run of failures
    bool stopped = false;

    // kChanged: derived from the last zone for the Services and slices the
    // Store's changes name (dns/zone/zone.h); kFull: from the whole snapshot (the
    // first zone, a reconfigure).
    enum class Rebuild { kChanged, kFull };
    void rebuild(Rebuild how) {
        auto changed = latency->take();  // before the snapshot: see ProgrammingLatency
        std::lock_guard lock(zone_mutex);
        // Taken before the snapshot, so the snapshot has at least these; a
        // change notified later is named by the next rebuild (Zone::update
        // compares with what the zone applied).
        std::vector<watch::Change> changes;
        {
            std::lock_guard builder_lock(builder->mutex);
            changes.swap(builder->pending);
            if (std::exchange(builder->full, false)) how = Rebuild::kFull;
        }
        changes.insert(changes.end(), reprogrammed.begin(), reprogrammed.end());
        // Freed, not cleared: the first report names every Service the
        // proxy programs (50k Changes, 8.9 MB of capacity at 50k Services).
        std::vector<watch::Change>().swap(reprogrammed);
        const bool pods_changed =
            how == Rebuild::kFull ||
            std::any_of(changes.begin(), changes.end(), [](const watch::Change& change) {
                return change.kind == watch::Kind::kPod;
            });
        auto snapshot = store->snapshot();
        // The search path's Pods come from the same snapshot (the Store's
        // kPod changes wake the builder like any other).
        if (pods_changed) publish_pods(*snapshot);
        // The zone holds nothing of Pods: a batch of Pod changes alone
        // publishes no zone, so the serving threads keep their rendered
        // replies (a new zone flushes them) while the node's Pods churn.
        const bool only_pods =
            how == Rebuild::kChanged && !changes.empty() && changed.empty() &&
            std::all_of(changes.begin(), changes.end(), [](const watch::Change& change) {
                return change.kind == watch::Kind::kPod;
            });
        if (only_pods && last_zone && last_zone->config() == zone_config) return;
        std::shared_ptr<const Zone> zone;
        if (how == Rebuild::kChanged && last_zone && last_zone->config() == zone_config) {
            zone = last_zone->update(*snapshot, changes, &programmed);
        } else {
            auto built = Zone::build(*snapshot, zone_config, &programmed);
            if (!built) {
                log::error("dns: cannot build the zone: {}", built.error().describe());
                return;
            }
            zone = std::move(*built);
        }
        last_zone = zone;
        if (answering_warm) {
            if (!zone->synced()) return;  // the warm state answers until the first synced zone
            answering_warm = false;
            answering_warm_metric = false;
            log::info("dns: the first synced zone ({} names) replaces the warm state",
                      zone->name_count());
        }
        const bool synced = zone->synced();
        zone_names = zone->name_count();
        zone_serial = zone->serial();
        zones.publish(std::move(zone));
        // After the publish: the writer writes the published zone, and one
        // scheduled before it would find the previous one (not synced, on a
        // first sync) and write nothing until the next change.
        if (synced) schedule_state_write();
        latency->observe(changed, *snapshot, std::chrono::system_clock::now());
        rebuilds.fetch_add(1, std::memory_order_relaxed);
    }

    // Publishes the zone of the warm state's file, when there is one that
    // fits `zone_config`; one line says which, or why it is ignored.
    void load_warm_state() {
        const auto started = std::chrono::steady_clock::now();
        auto zone = state_file->load(zone_config);
        if (!zone) {
            if (zone.error().code != ErrorCode::kNotFound) {
                log::warn("dns: warm state ignored: {}", zone.error().describe());
            }
            return;
        }
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started);
        log::info(
            "dns: answering from the warm state {} ({} names, read in {} ms) until the "
            "first synced zone",
            state_file->path(), (*zone)->name_count(), took.count());
        zone_names = (*zone)->name_count();
        zone_serial = (*zone)->serial();
        answering_warm = true;
        answering_warm_metric = true;
        zones.publish(std::move(*zone));
    }

    // The warm state's file is rewritten kStateWriteDelay from now, unless a
    // write is due already (any thread; the state writer's thread writes it).
    void schedule_state_write() {
        if (!state_file) return;
        std::lock_guard lock(state_writes.mutex);
        if (state_writes.due) return;
        // A process's first synced zone is written at once: until then a
        // crash would leave the next process nothing (or an older state).
        const bool first = state_file->writes() + state_file->write_failures() == 0;
        state_writes.due = first ? std::chrono::steady_clock::now()
                                 : std::max(std::chrono::steady_clock::now() + kStateWriteDelay,
                                            state_writes.earliest);
        state_writes.cv.notify_one();
    }

    // Writes the published zone to the warm state's file when it is synced
    // (the file's own zone is not written again). A failure is one warning
    // line per run of failures, and counted. `background`: the state
    // writer's, which pauses for changes and gives way to a write of
    // stop() or persist_state().
    Status write_state(bool background = false) {
        if (!state_file) return {};
        auto zone = zones.get();
        if (!zone || !zone->synced()) return {};
        Status status;
        if (background) {
            auto written = state_file->write_in_background(zone, [this] { wait_for_quiet(); });
            if (written && !*written) return {};  // gave way: that write reports
            if (!written) status = written.error();
        } else {
            status = state_file->write(zone);
        }
        if (!status && !state_write_failing.exchange(true)) {
            log::warn("dns: warm state not written: {}", status.error().describe());
        } else if (status && state_write_failing.exchange(false)) {
            log::info("dns: warm state written again to {}", state_file->path());
        }
        return status;
    }

    // Sleeps until kStateWriteQuiet after the Store's last change (at most
    // that long): a write of the warm state takes seconds of a core at 50k
    // Services, and on a 2-core node the changes that came during it waited
    // for the CPU their watch, sync and zone update needed (issue 26). A
    // pause, not a lower priority: the process has one malloc arena, and a
    // low-priority thread preempted while holding its lock would stall
    // every other thread for as long as the node's load keeps it off.
    void wait_for_quiet() {
        std::chrono::steady_clock::time_point last_change;
        {
            std::lock_guard lock(builder->mutex);
            last_change = builder->last_change;
        }
        const auto quiet_at = last_change + kStateWriteQuiet;
        const auto now = std::chrono::steady_clock::now();
        if (now < quiet_at)
            std::this_thread::sleep_for(
                std::min<std::chrono::steady_clock::duration>(quiet_at - now, kStateWriteQuiet));
    }

    // The state writer's thread: writes when a write falls due, pausing for
    // changes (wait_for_quiet), so that neither the zone builder nor a
    // change's sync waits for it. The zone it holds meanwhile is one the
    // builder may already have replaced.
    void run_state_writer() {
        auto& schedule = state_writes;
        std::unique_lock lock(schedule.mutex);
        while (true) {
            if (schedule.due) {
                schedule.cv.wait_until(lock, *schedule.due, [&] { return schedule.stopping; });
            } else {
                schedule.cv.wait(lock, [&] { return schedule.stopping || schedule.due; });
            }
            if (schedule.stopping) return;
            if (!schedule.due || std::chrono::steady_clock::now() < *schedule.due) continue;
            schedule.due.reset();
            lock.unlock();
            const auto began = thread_cpu_time();
            run_guarded("dns warm state", [this] { (void)write_state(true); });
            const auto cost = thread_cpu_time() - began;
            lock.lock();
            schedule.earliest =
                std::chrono::steady_clock::now() +
                kStateWriteCostFactor *
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(cost);
        }
    }

    // A new Pod directory from the snapshot's Pods (cheap: the Pod watch
    // lists this node's, ~110; PodDirectory keeps only those).
    void publish_pods(const watch::Snapshot& snapshot) {
        std::vector<const watch::Pod*> all;
        all.reserve(snapshot.pods().size());
        for (const auto& [key, pod] : snapshot.pods()) all.push_back(pod.get());
        pods.publish(PodDirectory::build(all, node_name));
    }

    std::shared_ptr<Server> current_server() const {
        std::lock_guard lock(server_mutex);
        return server;
    }

    // The server options for `options`' listen addresses, workers and TCP timeouts.
    ServerOptions server_options_for(const DnsOptions& options) {
        ServerOptions server_options;
        server_options.listen = options.listen;
        // An empty holder (no hosts plugin) answers nothing; a reload may fill it.
        server_options.hosts = &hosts;
        server_options.rrl = rrl.get();
        server_options.pods = &pods;
        server_options.workers = options.workers ? options.workers : default_workers;
        server_options.tcp_read_timeout = options.tcp_read_timeout;
        server_options.tcp_idle_timeout = options.tcp_idle_timeout;
        // A listener bound late is one more address a loop could come back to.
        server_options.on_late_bind = [this] { probe_loops(); };
        return server_options;
    }

    // Drops our own listen addresses from the current engine's upstreams and
    // sends its loop probes (none without a forwarder).
    void probe_loops() {
        auto engine = engines.get();
        if (!engine || !engine->forwarder) return;
        engine->forwarder->drop_self(current_server()->bound());
        engine->forwarder->send_loop_probes();
    }

    // Stops a replaced engine once no serving thread can start a forward
    // with it and its forwards have completed (bounded: kRetireTimeout).
    static void retire(std::shared_ptr<const QueryEngine> engine) {
        if (!engine || !engine->forwarder) return;
        std::this_thread::sleep_for(kRetireGrace);
        auto deadline = std::chrono::steady_clock::now() + kRetireTimeout;
        while (engine->in_flight.load(std::memory_order_acquire) > 0 &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        // Callbacks still pending (past the timeout) are answered SERVFAIL.
        engine->forwarder->stop();
    }

    void run_builder() {
        auto& b = *builder;
        std::unique_lock lock(b.mutex);
        while (true) {
            b.cv.wait(lock, [&b] { return b.dirty || b.stopping; });
            if (b.stopping) return;
            // Coalesce: wait until the burst goes quiet (bounded).
            while (!b.stopping) {
                auto now = std::chrono::steady_clock::now();
                auto quiet_at = b.last_change + kCoalesceQuiet;
                auto latest = b.first_change + kCoalesceMax;
                if (now >= quiet_at || now >= latest) break;
                b.cv.wait_until(lock, std::min(quiet_at, latest));
            }
            if (b.stopping) return;
            b.dirty = false;
            lock.unlock();
            // A zone that cannot be built keeps the last one; the next change retries.
            run_guarded("dns zone builder", [this] { rebuild(Rebuild::kChanged); });
            lock.lock();
        }
    }
};

DnsService::DnsService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

DnsService::~DnsService() {
    stop();
}

Result<std::unique_ptr<DnsService>> DnsService::start(DnsOptions options, watch::Store& store) {
    if (options.listen.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "--dns-listen: no address to listen on");
    }
    auto impl = std::make_unique<Impl>();
    impl->store = &store;
    impl->node_name = options.node_name;
    impl->zone_config = zone_config_for(options);
    if (auto origin = name_from_text(options.cluster_domain); !origin) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("--cluster-domain: {}", origin.error().message));
    }
    if (!options.state_file.empty()) {
        impl->state_file =
            std::make_unique<WarmStateFile>(options.state_file, options.state_identity);
        impl->load_warm_state();
    }
    impl->rebuild(Impl::Rebuild::kFull);  // queries never see "no zone"

    auto built = build_engine(options);
    if (!built) return built.error();
    const size_t upstream_count = built->upstreams;
    impl->engines.publish(std::move(built->engine));

    if (options.hosts) {
        impl->hosts_reloader = std::make_unique<HostsReloader>(*options.hosts, impl->hosts);
        impl->hosts_reloader->start();
    }
    impl->default_workers = usable_cpus();
    if (options.rrl.rate > 0) impl->rrl = std::make_unique<ResponseRateLimiter>(options.rrl);
    Impl* raw = impl.get();
    impl->server =
        std::make_shared<Server>(impl->server_options_for(options), impl->zones, impl->engines);
    if (auto status = impl->server->start(); !status) {
        impl->server->stop();
        if (auto engine = impl->engines.get(); engine->forwarder) engine->forwarder->stop();
        return status.error();
    }
    // Port 0 listen addresses are known only now.
    impl->probe_loops();

    std::weak_ptr<ProgrammingLatency> weak_latency = impl->latency;
    store.subscribe([weak_latency](const std::vector<watch::Change>& changes) {
        if (auto latency = weak_latency.lock()) latency->record(changes);
    });
    std::weak_ptr<ZoneBuilder> weak = impl->builder;
    store.subscribe([weak](const std::vector<watch::Change>& changes) {
        auto builder = weak.lock();
        if (!builder) return;
        std::lock_guard lock(builder->mutex);
        builder->pending.insert(builder->pending.end(), changes.begin(), changes.end());
        auto now = std::chrono::steady_clock::now();
        if (!builder->dirty) builder->first_change = now;
        builder->last_change = now;
        builder->dirty = true;
        builder->cv.notify_one();
    });
    {
        // Changes between the first build and the subscription are picked up.
        std::lock_guard lock(impl->builder->mutex);
        impl->builder->dirty = true;
        impl->builder->full = true;
        impl->builder->first_change = impl->builder->last_change = std::chrono::steady_clock::now();
    }
    impl->builder_thread = start_named_thread("sb-dns-zone", [raw] { raw->run_builder(); });
    if (impl->state_file)
        impl->state_writer_thread =
            start_named_thread("sb-dns-state", [raw] { raw->run_state_writer(); });
    std::vector<ListenerState> listening;
    std::vector<ListenerState> waiting;
    for (const auto& listener : impl->server->listeners()) {
        (listener.serving ? listening : waiting).push_back(listener);
    }
    log::info("dns: serving {} on {} ({} upstreams, {} stub zones){}", options.cluster_domain,
              listening.empty() ? "no address yet" : listen_names(listening), upstream_count,
              options.stubs.size(),
              waiting.empty() ? "" : fmt::format("; waiting to bind {}", listen_names(waiting)));
    impl->options = std::move(options);
    return std::unique_ptr<DnsService>(new DnsService(std::move(impl)));
}

void DnsService::stop() {
    if (!impl_) return;
    std::lock_guard lock(impl_->reconfigure_mutex);  // waits for a reconfigure under way
    if (impl_->stopped) return;
    impl_->stopped = true;
    {
        std::lock_guard lock(impl_->builder->mutex);
        impl_->builder->stopping = true;
        impl_->builder->cv.notify_all();
    }
    if (impl_->builder_thread.joinable()) impl_->builder_thread.join();
    {
        std::lock_guard lock(impl_->state_writes.mutex);
        impl_->state_writes.stopping = true;
        impl_->state_writes.cv.notify_all();
    }
    // The next process starts from the zone served last. A background write
    // under way gives way to this one, so the join below waits for neither.
    run_guarded("dns warm state", [this] { (void)impl_->write_state(); });
    if (impl_->state_writer_thread.joinable()) impl_->state_writer_thread.join();
    // Workers first (no new forwards), then the forwarder, whose pending
    // callbacks post into the (still allocated) workers' inboxes.
    impl_->current_server()->stop();
    for (auto& replaced : impl_->replaced_servers) replaced->stop();
    if (auto engine = impl_->engines.get(); engine && engine->forwarder) engine->forwarder->stop();
    if (impl_->hosts_reloader) impl_->hosts_reloader->stop();
}

Status DnsService::reconfigure(DnsOptions next) {
    std::lock_guard lock(impl_->reconfigure_mutex);
    if (impl_->stopped) return make_error(ErrorCode::kUnavailable, "DNS is stopped");
    if (auto origin = name_from_text(next.cluster_domain); !origin) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("cluster domain: {}", origin.error().message));
    }
    // New timeouts take new listeners too: each connection keeps its server's.
    const bool listen_changed = next.listen != impl_->options.listen ||
                                next.workers != impl_->options.workers ||
                                next.tcp_read_timeout != impl_->options.tcp_read_timeout ||
                                next.tcp_idle_timeout != impl_->options.tcp_idle_timeout;
    if (listen_changed && next.listen.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "no DNS address to listen on");
    }
    auto built = build_engine(next);
    if (!built) return built.error();
    std::shared_ptr<Server> retiring;
    if (listen_changed) {
        // The new listeners first (an address both sets have is bound twice:
        // SO_REUSEPORT), so no moment has neither set serving.
        auto server =
            std::make_shared<Server>(impl_->server_options_for(next), impl_->zones, impl_->engines);
        if (auto status = server->start(); !status) {
            server->stop();
            if (built->engine->forwarder) built->engine->forwarder->stop();
            return status.error();
        }
        std::lock_guard server_lock(impl_->server_mutex);
        retiring = std::exchange(impl_->server, std::move(server));
    }
    if (built->engine->forwarder) {
        built->engine->forwarder->drop_self(impl_->current_server()->bound());
        built->engine->forwarder->send_loop_probes();
    }
    {
        std::lock_guard zone_lock(impl_->zone_mutex);
        impl_->zone_config = zone_config_for(next);
    }
    impl_->rebuild(Impl::Rebuild::kFull);
    // The hosts plugin: a new reloader publishes its first table at start.
    if (impl_->hosts_reloader) impl_->hosts_reloader->stop();
    impl_->hosts_reloader.reset();
    if (next.hosts) {
        impl_->hosts_reloader = std::make_unique<HostsReloader>(*next.hosts, impl_->hosts);
        impl_->hosts_reloader->start();
    } else {
        impl_->hosts.publish(nullptr);
    }
    auto replaced = impl_->engines.get();
    impl_->engines.publish(std::move(built->engine));
    log::info("dns: reconfigured: serving {} ({} upstreams, {} stub zones)", next.cluster_domain,
              built->upstreams, next.stubs.size());
    impl_->options = std::move(next);
    if (retiring) {
        // The old listeners go on answering while their forwards complete
        // (the forwarder's attempts are bounded well below kListenDrain).
        std::this_thread::sleep_for(kListenDrain);
        retiring->stop();
        impl_->replaced_servers.push_back(std::move(retiring));
        log::info("dns: now listening on {}", listen_names(impl_->current_server()->listeners()));
    }
    Impl::retire(std::move(replaced));
    return {};
}

void DnsService::report_programmed(ProgrammedChanges changes) {
    {
        std::lock_guard lock(impl_->zone_mutex);
        const bool first = !impl_->programmed.reported();
        std::vector<watch::ObjectKey> changed = impl_->programmed.apply(changes);
        ProgrammedChanges().swap(changes);
        // The first report names no Service: the zone it publishes is built
        // whole (before it, a zone that waits for programming holds only its
        // apex, and Zone::update builds such a zone afresh; a zone that does
        // not wait reads nothing of the report). A Change per Service would
        // be 6.8 MB at 50k Services, alive through that build.
        if (!first) {
            for (watch::ObjectKey& key : changed) {
                impl_->reprogrammed.push_back(watch::Change{watch::Kind::kService, key, key});
            }
        }
        impl_->programmed_reports.fetch_add(1, std::memory_order_relaxed);
        impl_->programmed_count = impl_->programmed.size();
        if (!first && impl_->reprogrammed.empty()) return;
    }
    // On this thread, so that the caller's next step (a sync that removes
    // rules) comes after the names are gone. A rebuild of the builder
    // thread that takes the zone mutex first builds with this report too.
    run_guarded("dns zone builder", [this] { impl_->rebuild(Impl::Rebuild::kChanged); });
}

std::vector<HostPort> DnsService::bound() const {
    return impl_->current_server()->bound();
}

bool DnsService::serving() const {
    return impl_->current_server()->serving();
}

std::string DnsService::status_text() const {
    std::string text;
    for (const auto& listener : impl_->current_server()->listeners()) {
        if (listener.serving) {
            fmt::format_to(std::back_inserter(text), "{} serving\n", listener.name());
        } else {
            fmt::format_to(std::back_inserter(text), "{} not serving ({} failed binds): {}\n",
                           listener.name(), listener.bind_failures, listener.last_error);
        }
    }
    return text;
}

Status DnsService::persist_state() {
    Status status;
    run_guarded("dns warm state", [this, &status] { status = impl_->write_state(); });
    return status;
}

void DnsService::append_metrics(metrics::TextWriter& out) const {
    auto server = impl_->current_server();
    server->append_metrics(out);
    auto engine = impl_->engines.get();
    if (engine && engine->caches) {
        engine->caches->append_metrics(out, server->metrics_server_label());
    }
    auto line = [&out](const char* name, metrics::Type type, const char* help, uint64_t value) {
        out.family({name, help, type, {}});
        out.sample({}, value);
    };
    using metrics::Type;
    if (engine && engine->forwarder) engine->forwarder->append_metrics(out);
    if (auto hosts = impl_->hosts.get()) {
        // The hosts plugin's, as CoreDNS exports them (plugin/hosts/metrics.go).
        line("coredns_hosts_entries", Type::kGauge,
             "The combined number of entries in hosts and Corefile.", hosts->mapping_count());
        out.family({"coredns_hosts_reload_timestamp_seconds",
                    "The timestamp of the last reload of hosts file.",
                    Type::kGauge,
                    {}});
        out.sample({}, static_cast<double>(hosts->file_mtime_ns()) / 1e9);
    }
    if (impl_->rrl) impl_->rrl->append_metrics(out);
    line("coredns_panics_total", Type::kCounter, "A metrics that counts the number of panics.",
         panics_total());
    impl_->latency->append_metrics(out);
    line("switchboard_dns_programmed_services", Type::kGauge,
         "Services whose rules the proxy reported programmed, so that their names are "
         "published.",
         impl_->programmed_count.load());
    line("switchboard_dns_programmed_reports_total", Type::kCounter,
         "Reports of programmed rules from the proxy (before and after its syncs).",
         impl_->programmed_reports.load());
    line("switchboard_dns_zone_rebuilds_total", Type::kCounter,
         "Zones rebuilt after Store changes.", impl_->rebuilds.load());
    line("switchboard_dns_zone_names", Type::kGauge, "Names in the published zone.",
         impl_->zone_names.load());
    line("switchboard_dns_zone_serial", Type::kGauge, "SOA serial of the published zone.",
         impl_->zone_serial.load());
    if (const auto& file = impl_->state_file) {
        line("switchboard_dns_warm_state_answering", Type::kGauge,
             "1 while DNS answers from the warm state read at start, before its first synced "
             "zone.",
             impl_->answering_warm_metric.load() ? 1 : 0);
        line("switchboard_dns_warm_state_writes_total", Type::kCounter,
             "Synced zones written to the warm state's file.", file->writes());
        line("switchboard_dns_warm_state_write_failures_total", Type::kCounter,
             "Writes of the warm state's file that failed.", file->write_failures());
    }
}

}  // namespace sb::dns
