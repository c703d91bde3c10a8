#include "dns/dns_service.h"

#include <algorithm>
#include <condition_variable>
#include <thread>

#include "base/log.h"
#include "dns/cache_set.h"
#include "dns/forward.h"
#include "dns/hosts_reloader.h"
#include "dns/panic_guard.h"
#include "dns/programming_latency.h"
#include "dns/server.h"
#include "dns/zone.h"

namespace sb::dns {

Result<std::vector<HostPort>> parse_upstreams(std::string_view text) {
    std::vector<HostPort> result;
    size_t start = 0;
    while (start <= text.size()) {
        size_t comma = text.find(',', start);
        if (comma == std::string_view::npos) comma = text.size();
        std::string_view item = text.substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        if (item.empty()) {
            return make_error(ErrorCode::kInvalidArgument,
                              "--dns-upstream: empty entry in \"" + std::string(text) + "\"");
        }
        auto parsed = parse_host_port(item, 53);
        if (!parsed) {
            return make_error(ErrorCode::kInvalidArgument,
                              "--dns-upstream: " + parsed.error().message);
        }
        result.push_back(*parsed);
        start = comma + 1;
    }
    return result;
}

Result<PodRecords> parse_pod_records(std::string_view text) {
    if (text == "disabled") return PodRecords::kDisabled;
    if (text == "insecure") return PodRecords::kInsecure;
    if (text == "verified") return PodRecords::kVerified;
    return make_error(
        ErrorCode::kInvalidArgument,
        "--dns-pods: \"" + std::string(text) + "\" is not one of disabled, insecure, verified");
}

namespace {

// How long the zone builder waits for a burst of Store changes to settle,
// and the most it delays a rebuild while changes keep coming.
constexpr auto kCoalesceQuiet = std::chrono::milliseconds(20);
constexpr auto kCoalesceMax = std::chrono::milliseconds(200);

}  // namespace

// Rebuilds the zone on its own thread after Store changes. The Store's
// listener holds only a weak reference, since the Store cannot unsubscribe.
struct ZoneBuilder {
    std::mutex mutex;
    std::condition_variable cv;
    bool dirty = true;
    bool stopping = false;
    std::chrono::steady_clock::time_point first_change;
    std::chrono::steady_clock::time_point last_change;
};

struct DnsService::Impl {
    DnsOptions options;
    watch::Store* store = nullptr;
    ZoneConfig zone_config;
    ZoneHolder zones;
    HostsHolder hosts;
    std::unique_ptr<HostsReloader> hosts_reloader;
    std::shared_ptr<ZoneBuilder> builder = std::make_shared<ZoneBuilder>();
    std::thread builder_thread;
    std::unique_ptr<CacheSet> caches;
    std::unique_ptr<Forwarder> forwarder;
    std::unique_ptr<Server> server;
    // Shared with the Store's listener, which may outlive the service.
    std::shared_ptr<ProgrammingLatency> latency =
        std::make_shared<ProgrammingLatency>(std::chrono::system_clock::now());
    std::atomic<uint64_t> rebuilds{0};
    std::atomic<uint64_t> zone_names{0};
    std::atomic<uint64_t> zone_serial{0};
    bool stopped = false;

    void rebuild() {
        auto changed = latency->take();  // before the snapshot: see ProgrammingLatency
        auto snapshot = store->snapshot();
        auto zone = Zone::build(*snapshot, zone_config);
        if (!zone) {
            log::error("dns: cannot build the zone: {}", zone.error().describe());
            return;
        }
        zone_names = (*zone)->name_count();
        zone_serial = (*zone)->serial();
        zones.publish(std::move(*zone));
        latency->observe(changed, *snapshot, std::chrono::system_clock::now());
        rebuilds.fetch_add(1, std::memory_order_relaxed);
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
            run_guarded("dns zone builder", [this] { rebuild(); });
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
    impl->zone_config.domain = options.cluster_domain;
    impl->zone_config.ttl = options.ttl;
    impl->zone_config.pods = options.pods;
    impl->zone_config.endpoint_pod_names = options.endpoint_pod_names;
    impl->zone_config.endpoints = options.endpoints;
    if (auto origin = name_from_text(options.cluster_domain); !origin) {
        return make_error(ErrorCode::kInvalidArgument,
                          "--cluster-domain: " + origin.error().message);
    }
    impl->rebuild();  // queries never see "no zone"

    std::vector<HostPort> upstreams = options.upstreams;
    if (upstreams.empty()) upstreams = resolv_conf_nameservers(options.resolv_conf);
    bool stub_upstreams = std::any_of(options.stubs.begin(), options.stubs.end(),
                                      [](const StubZone& stub) { return !stub.upstreams.empty(); });
    if (!upstreams.empty() || stub_upstreams) {
        ForwarderOptions forward_options;
        forward_options.upstreams = upstreams;
        forward_options.options = options.forward;
        forward_options.stubs = options.stubs;
        impl->forwarder = std::make_unique<Forwarder>(forward_options);
        impl->forwarder->drop_self(options.listen);
        if (auto status = impl->forwarder->start(); !status) return status.error();
        impl->caches = options.caches ? std::make_unique<CacheSet>(*options.caches)
                                      : CacheSet::flags_default();
    } else {
        log::info("dns: no upstream nameserver: names outside {} are refused",
                  options.cluster_domain);
    }

    ServerOptions server_options;
    server_options.listen = options.listen;
    server_options.cluster = options.cluster;
    server_options.shuffle = options.shuffle;
    if (options.hosts) {
        impl->hosts_reloader = std::make_unique<HostsReloader>(*options.hosts, impl->hosts);
        impl->hosts_reloader->start();
        server_options.hosts = &impl->hosts;
    }
    server_options.workers =
        options.workers ? options.workers : std::max(1u, std::thread::hardware_concurrency());
    Impl* raw = impl.get();
    if (impl->forwarder) {
        // A listener bound late is one more address a loop could come back to.
        server_options.on_late_bind = [raw] {
            raw->forwarder->drop_self(raw->server->bound());
            raw->forwarder->send_loop_probes();
        };
    }
    impl->server = std::make_unique<Server>(server_options, impl->zones, impl->forwarder.get(),
                                            impl->caches.get());
    if (auto status = impl->server->start(); !status) {
        impl->server->stop();
        if (impl->forwarder) impl->forwarder->stop();
        return status.error();
    }
    if (impl->forwarder) {
        // Port 0 listen addresses are known only now.
        impl->forwarder->drop_self(impl->server->bound());
        impl->forwarder->send_loop_probes();
    }

    std::weak_ptr<ProgrammingLatency> weak_latency = impl->latency;
    store.subscribe([weak_latency](const std::vector<watch::Change>& changes) {
        if (auto latency = weak_latency.lock()) latency->record(changes);
    });
    std::weak_ptr<ZoneBuilder> weak = impl->builder;
    store.subscribe([weak](const std::vector<watch::Change>&) {
        auto builder = weak.lock();
        if (!builder) return;
        std::lock_guard lock(builder->mutex);
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
        impl->builder->first_change = impl->builder->last_change = std::chrono::steady_clock::now();
    }
    impl->builder_thread = std::thread([raw] { raw->run_builder(); });
    std::string listening;
    std::string waiting;
    for (const auto& listener : impl->server->listeners()) {
        std::string& list = listener.serving ? listening : waiting;
        list += (list.empty() ? "" : ", ") + listener.name();
    }
    log::info("dns: serving {} on {} ({} upstreams, {} stub zones){}", options.cluster_domain,
              listening.empty() ? "no address yet" : listening, upstreams.size(),
              options.stubs.size(), waiting.empty() ? "" : "; waiting to bind " + waiting);
    impl->options = std::move(options);
    return std::unique_ptr<DnsService>(new DnsService(std::move(impl)));
}

void DnsService::stop() {
    if (!impl_ || impl_->stopped) return;
    impl_->stopped = true;
    {
        std::lock_guard lock(impl_->builder->mutex);
        impl_->builder->stopping = true;
        impl_->builder->cv.notify_all();
    }
    if (impl_->builder_thread.joinable()) impl_->builder_thread.join();
    // Workers first (no new forwards), then the forwarder, whose pending
    // callbacks post into the (still allocated) workers' inboxes.
    impl_->server->stop();
    if (impl_->forwarder) impl_->forwarder->stop();
    if (impl_->hosts_reloader) impl_->hosts_reloader->stop();
}

std::vector<HostPort> DnsService::bound() const {
    return impl_->server->bound();
}

bool DnsService::serving() const {
    return impl_->server->serving();
}

std::string DnsService::status_text() const {
    std::string text;
    for (const auto& listener : impl_->server->listeners()) {
        text += listener.name();
        if (listener.serving) {
            text += " serving\n";
        } else {
            text += " not serving (" + std::to_string(listener.bind_failures) +
                    " failed binds): " + listener.last_error + "\n";
        }
    }
    return text;
}

void DnsService::append_metrics(metrics::TextWriter& out) const {
    impl_->server->append_metrics(out);
    if (impl_->caches) impl_->caches->append_metrics(out, impl_->server->metrics_server_label());
    auto line = [&out](const char* name, metrics::Type type, const char* help, uint64_t value) {
        out.family({name, help, type, {}});
        out.sample({}, value);
    };
    using metrics::Type;
    if (impl_->forwarder) impl_->forwarder->append_metrics(out);
    line("coredns_panics_total", Type::kCounter, "A metrics that counts the number of panics.",
         panics_total());
    impl_->latency->append_metrics(out);
    line("switchboard_dns_zone_rebuilds_total", Type::kCounter,
         "Zones rebuilt after Store changes.", impl_->rebuilds.load());
    line("switchboard_dns_zone_names", Type::kGauge, "Names in the published zone.",
         impl_->zone_names.load());
    line("switchboard_dns_zone_serial", Type::kGauge, "SOA serial of the published zone.",
         impl_->zone_serial.load());
}

}  // namespace sb::dns
