// The Daemon wired to a file source and a fake backend: what the backend is
// asked to do, and what the HTTP routes answer. No sockets are bound (both
// bind addresses are off) and no kernel state is touched.
#include <unistd.h>

#include <catch.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "base/timestamp.h"
#include "proxy/app/backend_choice.h"
#include "proxy/app/daemon.h"
#include "proxy/app/exit_codes.h"
#include "proxy/sync/planner.h"
#include "rules/ipvs/ipvs_backend.h"
#include "rules/plan_json.h"
#include "tests/unit/eventually.h"
#include "tests/unit/exposition.h"
#include "watch/snapshot_builder.h"

using namespace sb;
using namespace sb::proxy;
using namespace std::chrono_literals;

namespace {

struct BackendLog {
    std::mutex mutex;
    std::condition_variable changed;
    struct Call {
        rules::Plan plan;
        bool had_previous = false;
        size_t backend = 0;  // index in `made` of the backend that was called
    };
    std::vector<Call> calls;
    // The options of every backend made through recording_factory(), in order.
    std::vector<rules::BackendOptions> made;
    bool fail_next = false;
    bool conntrack_fail_next = false;  // the next sync reports a failed IPv4 reconcile

    // Bounded wait; only a broken daemon reaches the limit.
    bool wait_for_calls(size_t count) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, 20s, [&] { return calls.size() >= count; });
    }
    Call call(size_t index) {
        std::lock_guard lock(mutex);
        return calls.at(index);
    }
    std::vector<rules::BackendOptions> backends_made() {
        std::lock_guard lock(mutex);
        return made;
    }
};

class FakeBackend final : public rules::Backend {
  public:
    explicit FakeBackend(std::shared_ptr<BackendLog> log, size_t index = 0)
        : log_(std::move(log)), index_(index) {}
    const char* name() const override { return "fake"; }
    Result<rules::SyncStats> sync(const rules::Plan& plan, const rules::Plan* previous) override {
        std::lock_guard lock(log_->mutex);
        log_->calls.push_back({plan, previous != nullptr, index_});
        log_->changed.notify_all();
        if (std::exchange(log_->fail_next, false)) {
            return make_error(ErrorCode::kKernel, "injected failure");
        }
        rules::SyncStats stats;
        stats.full = previous == nullptr;
        stats.objects_sent = 1;
        stats.services = plan.services.size();
        rules::ConntrackReconcile& v4 = stats.conntrack.emplace_back();
        v4.dumped = true;
        v4.deleted = 2;
        if (std::exchange(log_->conntrack_fail_next, false)) {
            v4.ok = false;
            v4.error = "conntrack: dump: injected";
        }
        return stats;
    }
    Status cleanup() override { return {}; }
    Result<std::string> render_text(const rules::Plan&) override { return std::string("fake\n"); }

  private:
    std::shared_ptr<BackendLog> log_;
    size_t index_;
};

// A factory that logs the options of each backend it makes (called on the
// daemon's sync thread).
BackendFactory recording_factory(std::shared_ptr<BackendLog> log) {
    return [log](const rules::BackendOptions& options) {
        std::lock_guard lock(log->mutex);
        log->made.push_back(options);
        return std::unique_ptr<rules::Backend>(new FakeBackend(log, log->made.size() - 1));
    };
}

std::string service_json(const std::string& name, const std::string& ip) {
    return R"({"apiVersion": "v1", "kind": "Service",
      "metadata": {"name": ")" +
           name + R"(", "namespace": "default"},
      "spec": {"clusterIP": ")" +
           ip + R"(", "clusterIPs": [")" + ip + R"("], "ipFamilies": ["IPv4"],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
        "selector": {"app": "x"}, "type": "ClusterIP"}})";
}

struct TempCluster {
    std::filesystem::path dir;
    std::filesystem::path file;
    TempCluster() {
        char pattern[] = "/tmp/sb-unit-daemon-XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        dir = pattern;
        file = dir / "cluster.json";
    }
    ~TempCluster() { std::filesystem::remove_all(dir); }
    void write(const std::vector<std::string>& items) {
        std::string text = R"({"apiVersion": "v1", "kind": "List", "items": [)";
        for (size_t i = 0; i < items.size(); ++i) text += (i ? "," : "") + items[i];
        text += "]}";
        auto partial = dir / "cluster.tmp";
        std::ofstream(partial) << text;
        std::filesystem::rename(partial, file);  // atomic for the watcher
    }
};

std::string slice_json(const std::string& name, const std::string& service, const std::string& ip,
                       const std::string& trigger_time = "") {
    std::string annotations;
    if (!trigger_time.empty()) {
        annotations = R"(, "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": ")" +
                      trigger_time + R"("})";
    }
    return R"({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
      "metadata": {"name": ")" +
           name + R"(", "namespace": "default", "labels": {"kubernetes.io/service-name": ")" +
           service + "\"}" + annotations + R"(},
      "addressType": "IPv4",
      "endpoints": [{"addresses": [")" +
           ip + R"("], "conditions": {"ready": true}, "nodeName": "node-a"}],
      "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})";
}

// This node's Node object; `extra_metadata` / `spec` / `status` are JSON members.
std::string node_json(const std::string& extra_metadata = "", const std::string& spec = "{}",
                      const std::string& status = "{}") {
    return R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a")" +
           extra_metadata + R"(}, "spec": )" + spec + R"(, "status": )" + status + "}";
}

// testing::eventually with the daemon's bound: only a broken daemon reaches 20 s.
bool eventually(const std::function<bool()>& done) {
    return testing::eventually(done, 20s);
}

testing::Exposition scrape(Daemon& daemon) {
    return testing::parse_exposition(daemon.metrics_text());
}

Options daemon_options(const std::string& source) {
    Options options;
    options.source_file = source;
    options.node_name = "node-a";
    options.metrics_bind.reset();
    options.healthz_bind.reset();
    options.min_sync_period = 10ms;
    options.sync_period = 1h;
    return options;
}

}  // namespace

TEST_CASE("the daemon syncs the source's state, full first, then partial") {
    TempCluster cluster;
    cluster.write({service_json("a", "10.96.0.1")});
    auto log = std::make_shared<BackendLog>();
    Daemon daemon(daemon_options(cluster.file.string()), [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    auto routes = daemon.metrics_routes();
    CHECK(routes.at("/readyz")().status == 503);
    CHECK(routes.at("/debug/services")().status == 503);

    REQUIRE(daemon.start().ok());
    REQUIRE(log->wait_for_calls(1));
    auto first = log->call(0);
    CHECK_FALSE(first.had_previous);  // the first sync repairs whatever is there
    REQUIRE(first.plan.services.size() == 1);
    CHECK(first.plan.services[0].service == "a");

    // A new Service: a partial sync with the previous plan.
    cluster.write({service_json("a", "10.96.0.1"), service_json("b", "10.96.0.2")});
    REQUIRE(log->wait_for_calls(2));
    auto second = log->call(1);
    CHECK(second.had_previous);
    CHECK(second.plan == build_plan(*daemon.store().snapshot(), PlannerOptions{"node-a"}));
    CHECK(second.plan.services.size() == 2);

    CHECK(routes.at("/readyz")().status == 200);
    CHECK(routes.at("/proxyMode")().body == "nftables");
    CHECK(routes.at("/healthz")().body == "ok");     // kube-proxy's healthz.InstallHandler
    CHECK(routes.at("/debug/dns")().status == 404);  // no --dns-listen: DNS is off
    auto debug = routes.at("/debug/services")();
    CHECK(debug.status == 200);
    CHECK(debug.body == rules::plan_to_json(second.plan));
    // The backend saw the call; the metrics follow when sync() returns.
    std::string metrics;
    testing::eventually([&] {
        metrics = routes.at("/metrics")().body;
        return metrics.find(
                   "kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"} "
                   "1\n") != std::string::npos;
    });
    CHECK(
        metrics.find(
            "kubeproxy_sync_partial_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"} 1\n") !=
        std::string::npos);
    CHECK(metrics.find(
              "kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family=\"IPv6\"} 1\n") !=
          std::string::npos);
    CHECK(metrics.find("kubeproxy_sync_proxy_rules_service_changes_total 2\n") !=
          std::string::npos);
    auto healthz = daemon.healthz_routes().at("/healthz")();
    CHECK(healthz.status == 200);
    daemon.stop();
    daemon.stop();  // idempotent
}

TEST_CASE("a failed sync is retried in full and counted") {
    TempCluster cluster;
    cluster.write({service_json("a", "10.96.0.1")});
    auto log = std::make_shared<BackendLog>();
    log->fail_next = true;
    Options options = daemon_options(cluster.file.string());
    Daemon daemon(options, [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    REQUIRE(daemon.start().ok());
    REQUIRE(log->wait_for_calls(2));  // the retry comes after a 1 s backoff
    CHECK_FALSE(log->call(1).had_previous);
    CHECK(daemon.metrics_text().find("switchboard_sync_errors_total 1\n") != std::string::npos);
    // The retry succeeds, so readiness follows as soon as sync() returns.
    CHECK(testing::eventually([&] { return daemon.first_sync_done(); }));
}

TEST_CASE("a failed conntrack reconcile is counted and retried at the next sync") {
    TempCluster cluster;
    cluster.write({service_json("a", "10.96.0.1")});
    auto log = std::make_shared<BackendLog>();
    log->conntrack_fail_next = true;
    Daemon daemon(daemon_options(cluster.file.string()), [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    REQUIRE(daemon.start().ok());
    REQUIRE(log->wait_for_calls(1));
    const char* failures = "switchboard_conntrack_reconciler_failures_total{ip_family=\"IPv4\"}";
    REQUIRE(eventually([&] { return scrape(daemon).value(failures) == 1; }));
    // A change that leaves the plan as it was (a headless Service has no
    // service ports): without the failure the backend would not be called.
    cluster.write({service_json("a", "10.96.0.1"), service_json("b", "None")});
    REQUIRE(log->wait_for_calls(2));
    CHECK(log->call(1).had_previous);
    CHECK(log->call(1).plan == log->call(0).plan);
    REQUIRE(eventually([&] {
        return scrape(daemon).value(
                   "kubeproxy_conntrack_reconciler_deleted_entries_total{ip_family=\"IPv4\"}") == 4;
    }));
    CHECK(scrape(daemon).value(failures) == 1);
    CHECK(scrape(daemon).value(
              "kubeproxy_conntrack_reconciler_sync_duration_seconds_count{ip_family=\"IPv4\"}") ==
          2);
    daemon.stop();
}

TEST_CASE("an unreadable source is a configuration error naming the file") {
    Daemon daemon(daemon_options("/nonexistent/sb-cluster.json"), [](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(std::make_shared<BackendLog>()));
    });
    auto status = daemon.start();
    REQUIRE_FALSE(status.ok());
    CHECK(exit_code_for(status.error()) == kExitUsage);
    CHECK(status.error().message.find("sb-cluster.json") != std::string::npos);
}

TEST_CASE("every mode has a backend; ipvs without IPVS in the kernel runs nftables") {
    for (ProxyMode mode : {ProxyMode::kNftables, ProxyMode::kIptables, ProxyMode::kIpvs}) {
        auto factory = backend_factory(mode);
        REQUIRE(factory.ok());
        CHECK(std::string((*factory)(rules::BackendOptions{})->name()) == to_string(mode));
    }
    CHECK(mode_in_use(ProxyMode::kNftables) == ProxyMode::kNftables);
    CHECK(mode_in_use(ProxyMode::kIptables) == ProxyMode::kIptables);
    // The unit tests run where the generic-netlink family IPVS may or may not
    // resolve; either way the answer is the mode that can run.
    const ProxyMode ipvs = mode_in_use(ProxyMode::kIpvs);
    CHECK(ipvs == (rules::ipvs::ipvs_available() ? ProxyMode::kIpvs : ProxyMode::kNftables));
}

TEST_CASE("--nodeport-addresses=primary reads the Node's first InternalIP per family") {
    watch::Node node;
    node.meta.name = "node-a";
    node.addresses = {{"Hostname", "node-a"},
                      {"InternalIP", "192.168.1.5"},
                      {"InternalIP", "192.168.1.6"},
                      {"ExternalIP", "203.0.113.5"},
                      {"InternalIP", "fd00::5"}};
    const auto snapshot = watch::SnapshotBuilder().add(node).build();
    auto prefixes = primary_node_prefixes(*snapshot, "node-a");
    CHECK(prefixes ==
          std::vector<Prefix>{*Prefix::parse("192.168.1.5/32"), *Prefix::parse("fd00::5/128")});
    CHECK(primary_node_prefixes(*snapshot, "node-b").empty());
}

TEST_CASE("a daemon's whole /metrics is valid, every family announced once") {
    TempCluster cluster;
    cluster.write(
        {service_json("a", "10.96.0.1"), slice_json("a-1", "a", "10.244.0.5"), node_json()});
    auto log = std::make_shared<BackendLog>();
    Options options = daemon_options(cluster.file.string());
    // DNS too, so that its families are in the same text.
    options.dns.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
    options.dns.upstreams = {HostPort{*IpAddress::parse("127.0.0.1"), 9}};
    options.dns.workers = 1;
    Daemon daemon(options, [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    REQUIRE(daemon.start().ok());
    REQUIRE(eventually([&] { return daemon.first_sync_done(); }));
    daemon.healthz_routes().at("/healthz")();
    daemon.healthz_routes().at("/livez")();

    auto response = daemon.metrics_routes().at("/metrics")();
    CHECK(response.content_type == "text/plain; version=0.0.4; charset=utf-8");
    auto metrics = testing::parse_exposition(response.body);
    for (const auto& problem : metrics.problems) FAIL_CHECK(problem);
    for (const char* family : {"process_cpu_seconds_total",
                               "process_resident_memory_bytes",
                               "process_virtual_memory_bytes",
                               "process_virtual_memory_max_bytes",
                               "process_open_fds",
                               "process_max_fds",
                               "process_start_time_seconds",
                               "kubernetes_build_info",
                               "switchboard_build_info",
                               "kubeproxy_sync_proxy_rules_duration_seconds",
                               "kubeproxy_network_programming_duration_seconds",
                               "kubeproxy_sync_proxy_rules_endpoint_changes_pending",
                               "kubeproxy_sync_proxy_rules_service_changes_pending",
                               "kubeproxy_proxy_healthz_total",
                               "kubeproxy_proxy_livez_total",
                               "kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
                               "switchboard_source_objects_rejected_total",
                               "coredns_dns_requests_total",
                               "coredns_dns_request_duration_seconds",
                               "coredns_forward_requests_total",
                               "coredns_cache_entries",
                               "switchboard_dns_zone_names"}) {
        INFO(family);
        CHECK(metrics.has_family(family));
    }
    CHECK(metrics.value("kubeproxy_proxy_healthz_total{code=\"200\"}") == 1);
    CHECK(metrics.value("kubeproxy_proxy_livez_total{code=\"200\"}") == 1);
    CHECK(metrics.value("process_open_fds") > 0);
    daemon.stop();
}

TEST_CASE("network programming latency is observed once the backend took the change") {
    TempCluster cluster;
    cluster.write({service_json("a", "10.96.0.1"), slice_json("a-1", "a", "10.244.0.5")});
    auto log = std::make_shared<BackendLog>();
    Daemon daemon(daemon_options(cluster.file.string()), [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    // After the daemon (and its tracker) started: a change it has to program.
    const auto triggered = std::chrono::system_clock::now();
    REQUIRE(daemon.start().ok());
    REQUIRE(log->wait_for_calls(1));
    const std::string name = "kubeproxy_network_programming_duration_seconds";
    CHECK(scrape(daemon).value(name + "_count{ip_family=\"IPv4\"}") == 0);

    // The change waits at least 300 ms before it reaches the daemon, so its
    // latency is above the 0.25 s bucket.
    std::this_thread::sleep_for(300ms);
    cluster.write({service_json("a", "10.96.0.1"),
                   slice_json("a-1", "a", "10.244.0.6", format_rfc3339_nano(triggered))});
    REQUIRE(log->wait_for_calls(2));
    REQUIRE(
        eventually([&] { return scrape(daemon).value(name + "_count{ip_family=\"IPv4\"}") == 1; }));
    const double age =
        std::chrono::duration<double>(std::chrono::system_clock::now() - triggered).count();
    auto metrics = scrape(daemon);
    for (const std::string family : {"IPv4", "IPv6"}) {
        const std::string l = "ip_family=\"" + family + "\"";
        CHECK(metrics.value(name + "_count{" + l + "}") == 1);
        CHECK(metrics.value(name + "_bucket{" + l + ",le=\"0.25\"}") == 0);
        CHECK(metrics.value(name + "_bucket{" + l + ",le=\"300\"}") == 1);
        CHECK(metrics.value(name + "_sum{" + l + "}") >= 0.3);
        CHECK(metrics.value(name + "_sum{" + l + "}") <= age);
    }
    daemon.stop();
}

TEST_CASE("a Node being deleted or tainted turns /healthz 503 while /livez stays 200") {
    TempCluster cluster;
    const std::string service = service_json("a", "10.96.0.1");
    cluster.write({service, node_json()});
    auto log = std::make_shared<BackendLog>();
    Daemon daemon(daemon_options(cluster.file.string()), [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    auto routes = daemon.healthz_routes();
    REQUIRE(daemon.start().ok());
    REQUIRE(eventually([&] { return daemon.first_sync_done(); }));
    CHECK(routes.at("/healthz")().status == 200);

    cluster.write({service, node_json(R"(, "deletionTimestamp": "2024-05-01T12:00:00Z")")});
    REQUIRE(eventually([&] { return routes.at("/healthz")().status == 503; }));
    auto healthz = routes.at("/healthz")();
    CHECK(healthz.body.find(R"("nodeEligible":false)") != std::string::npos);
    auto livez = routes.at("/livez")();
    CHECK(livez.status == 200);
    CHECK(livez.body.find("nodeEligible") == std::string::npos);

    cluster.write({service, node_json()});
    REQUIRE(eventually([&] { return routes.at("/healthz")().status == 200; }));
    cluster.write({service, node_json("", R"({"taints": [{"key": "ToBeDeletedByClusterAutoscaler",
        "value": "1714564800", "effect": "NoSchedule"}]})")});
    REQUIRE(eventually([&] { return routes.at("/healthz")().status == 503; }));
    CHECK(routes.at("/livez")().status == 200);

    auto metrics = scrape(daemon);
    CHECK(metrics.value("kubeproxy_proxy_healthz_total{code=\"503\"}") >= 3);
    CHECK(metrics.value("kubeproxy_proxy_healthz_total{code=\"200\"}") >= 2);
    CHECK(metrics.value("kubeproxy_proxy_livez_total{code=\"200\"}") == 2);
    daemon.stop();
}

TEST_CASE("pending change gauges rise with changes and are 0 after the sync takes them") {
    TempCluster cluster;
    cluster.write({service_json("a", "10.96.0.1")});
    auto log = std::make_shared<BackendLog>();
    Options options = daemon_options(cluster.file.string());
    // No partial sync for an hour after the first: the changes stay pending.
    options.min_sync_period = 1h;
    Daemon daemon(options, [log](const rules::BackendOptions&) {
        return std::unique_ptr<rules::Backend>(new FakeBackend(log));
    });
    REQUIRE(daemon.start().ok());
    REQUIRE(eventually([&] { return daemon.first_sync_done(); }));
    // The first sync took the initial state's changes.
    auto metrics = scrape(daemon);
    CHECK(metrics.value("kubeproxy_sync_proxy_rules_service_changes_pending") == 0);
    CHECK(metrics.value("kubeproxy_sync_proxy_rules_endpoint_changes_pending") == 0);
    const double queued_before = *metrics.value(
        "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family=\"IPv4\"}");

    watch::Service b;
    b.meta.ns = "default";
    b.meta.name = "b";
    b.cluster_ips = {*IpAddress::parse("10.96.0.2")};
    daemon.store().upsert(b);
    watch::EndpointSlice slice;
    slice.meta.ns = "default";
    slice.meta.name = "b-1";
    slice.service_name = "b";
    daemon.store().upsert(slice);
    slice.meta.resource_version = "2";
    daemon.store().upsert(slice);
    metrics = scrape(daemon);
    CHECK(metrics.value("kubeproxy_sync_proxy_rules_service_changes_pending") == 1);
    CHECK(metrics.value("kubeproxy_sync_proxy_rules_endpoint_changes_pending") == 2);
    CHECK(metrics.value("kubeproxy_sync_proxy_rules_service_changes_total") == 2);
    CHECK(metrics.value("kubeproxy_sync_proxy_rules_endpoint_changes_total") == 2);
    CHECK(*metrics.value(
              "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family=\"IPv4\"}") >=
          queued_before);
    {
        std::lock_guard lock(log->mutex);
        CHECK(log->calls.size() == 1);  // no sync ran for these changes
    }
    daemon.stop();
}

namespace {

std::vector<Prefix> prefixes(std::initializer_list<const char*> texts) {
    std::vector<Prefix> out;
    for (const char* text : texts) out.push_back(*Prefix::parse(text));
    return out;
}

std::string node_with_internal_ip(const std::string& ip) {
    return node_json("", "{}",
                     R"({"addresses": [{"type": "InternalIP", "address": ")" + ip + R"("}]})");
}

// A started daemon on a file source with Service "a" and this Node, whose
// backends are logged. Each write_node() also adds or removes Service "b",
// so every write changes the plan and is followed by one backend sync,
// whether or not a new backend is made.
class NodeDerivedOptions {
  public:
    NodeDerivedOptions(const Options& options, const std::string& node)
        : log_(std::make_shared<BackendLog>()) {
        cluster_.write({service_json("a", "10.96.0.1"), node});
        Options wired = options;
        wired.source_file = cluster_.file.string();
        daemon_ = std::make_unique<Daemon>(wired, recording_factory(log_));
        REQUIRE(daemon_->start().ok());
        REQUIRE(log_->wait_for_calls(1));
    }
    ~NodeDerivedOptions() { daemon_->stop(); }

    // The backend call that follows writing `node`.
    BackendLog::Call write_node(const std::string& node) {
        with_b_ = !with_b_;
        std::vector<std::string> items = {service_json("a", "10.96.0.1"), node};
        if (with_b_) items.push_back(service_json("b", "10.96.0.2"));
        cluster_.write(items);
        REQUIRE(log_->wait_for_calls(++syncs_));
        return log_->call(syncs_ - 1);
    }
    BackendLog& log() { return *log_; }

  private:
    TempCluster cluster_;
    std::shared_ptr<BackendLog> log_;
    std::unique_ptr<Daemon> daemon_;
    bool with_b_ = false;
    size_t syncs_ = 1;
};

Options node_cidr_options() {
    Options options = daemon_options("");
    options.backend.local_detect_mode = rules::LocalDetectMode::kNodeCidr;
    options.backend.cluster_cidrs = prefixes({"10.0.0.0/8"});  // --cluster-cidr: not used
    return options;
}

}  // namespace

TEST_CASE("--detect-local-mode=NodeCIDR gives the backend the Node's spec.podCIDRs") {
    NodeDerivedOptions daemon(
        node_cidr_options(),
        node_json("", R"({"podCIDRs": ["10.244.1.0/24", "fd00:10:244:1::/64"]})"));
    auto made = daemon.log().backends_made();
    REQUIRE(made.size() == 1);
    CHECK(made[0].local_detect_mode == rules::LocalDetectMode::kNodeCidr);
    CHECK(made[0].cluster_cidrs == prefixes({"10.244.1.0/24", "fd00:10:244:1::/64"}));
    CHECK_FALSE(daemon.log().call(0).had_previous);
}

TEST_CASE("NodeCIDR: no podCIDRs yet is none; once assigned, a new backend syncs in full") {
    NodeDerivedOptions daemon(node_cidr_options(), node_json());
    REQUIRE(daemon.log().backends_made().size() == 1);
    CHECK(daemon.log().backends_made()[0].cluster_cidrs.empty());  // kube-proxy's no-op detector

    // A partial sync first, so that the new backend's sync is not full
    // merely because it is the daemon's first.
    auto partial = daemon.write_node(node_json());
    CHECK(partial.backend == 0);
    CHECK(partial.had_previous);

    const std::string assigned = node_json("", R"({"podCIDRs": ["10.244.1.0/24"]})");
    auto remade = daemon.write_node(assigned);
    auto made = daemon.log().backends_made();
    REQUIRE(made.size() == 2);
    CHECK(made[1].cluster_cidrs == prefixes({"10.244.1.0/24"}));
    CHECK(remade.backend == 1);
    CHECK_FALSE(remade.had_previous);  // the new backend repairs what the old one wrote

    // The same podCIDRs again: the backend stays and syncs partially.
    auto kept = daemon.write_node(assigned);
    CHECK(daemon.log().backends_made().size() == 2);
    CHECK(kept.backend == 1);
    CHECK(kept.had_previous);
}

TEST_CASE("ClusterCIDR: a Node change does not remake the backend") {
    Options options = daemon_options("");
    options.backend.cluster_cidrs = prefixes({"10.0.0.0/8"});
    NodeDerivedOptions daemon(options, node_json());

    auto after = daemon.write_node(node_json("", R"({"podCIDRs": ["10.244.1.0/24"]})"));
    auto made = daemon.log().backends_made();
    REQUIRE(made.size() == 1);
    CHECK(made[0].cluster_cidrs == prefixes({"10.0.0.0/8"}));
    CHECK(made[0].nodeport_addresses.empty());
    CHECK(after.backend == 0);
    CHECK(after.had_previous);
    CHECK(after.plan.services.size() == 2);
}

TEST_CASE("the backend's node_ips follow the Node's addresses and --bind-address") {
    NodeDerivedOptions daemon(daemon_options(""), node_json());
    REQUIRE(daemon.log().backends_made().size() == 1);
    CHECK(daemon.log().backends_made()[0].node_ips.empty());  // the Node has no address yet

    auto known = daemon.write_node(
        node_json("", "{}",
                  R"({"addresses": [{"type": "ExternalIP", "address": "203.0.113.5"},
                          {"type": "InternalIP", "address": "192.168.1.5"},
                          {"type": "InternalIP", "address": "fd00::5"}]})"));
    auto made = daemon.log().backends_made();
    REQUIRE(made.size() == 2);  // a new address remakes the backend, as podCIDRs do
    CHECK(made[1].node_ips ==
          std::vector<IpAddress>{*IpAddress::parse("192.168.1.5"), *IpAddress::parse("fd00::5")});
    CHECK(known.backend == 1);

    Options bound = daemon_options("");
    bound.bind_address = *IpAddress::parse("192.168.1.77");
    NodeDerivedOptions pinned(bound, node_with_internal_ip("192.168.1.5"));
    REQUIRE(pinned.log().backends_made().size() == 1);
    CHECK(pinned.log().backends_made()[0].node_ips ==
          std::vector<IpAddress>{*IpAddress::parse("192.168.1.77")});
}

TEST_CASE("--nodeport-addresses=primary follows the Node's InternalIP") {
    Options options = daemon_options("");
    options.nodeport_primary = true;
    NodeDerivedOptions daemon(options, node_json());
    REQUIRE(daemon.log().backends_made().size() == 1);
    CHECK(daemon.log().backends_made()[0].nodeport_addresses.empty());  // every local address
    // ... but not loopback: localhost NodePorts (and route_localnet) stay off.
    CHECK_FALSE(daemon.log().backends_made()[0].localhost_node_ports);
    CHECK(daemon.write_node(node_json()).had_previous);

    auto first = daemon.write_node(node_with_internal_ip("192.168.1.5"));
    auto made = daemon.log().backends_made();
    REQUIRE(made.size() == 2);
    CHECK(made[1].nodeport_addresses == prefixes({"192.168.1.5/32"}));
    CHECK_FALSE(made[1].localhost_node_ports);
    CHECK(first.backend == 1);
    CHECK_FALSE(first.had_previous);

    auto moved = daemon.write_node(node_with_internal_ip("192.168.1.9"));
    made = daemon.log().backends_made();
    REQUIRE(made.size() == 3);
    CHECK(made[2].nodeport_addresses == prefixes({"192.168.1.9/32"}));
    CHECK(moved.backend == 2);
    CHECK_FALSE(moved.had_previous);
}
