// The Daemon wired to a file source and a fake backend: what the backend is
// asked to do, and what the HTTP routes answer. No sockets are bound (both
// bind addresses are off) and no kernel state is touched.
#include <unistd.h>

#include <catch.hpp>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include "proxy/daemon.h"
#include "proxy/planner.h"
#include "rules/plan_json.h"

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
    };
    std::vector<Call> calls;
    bool fail_next = false;

    // Bounded wait; only a broken daemon reaches the limit.
    bool wait_for_calls(size_t count) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, 20s, [&] { return calls.size() >= count; });
    }
    Call call(size_t index) {
        std::lock_guard lock(mutex);
        return calls.at(index);
    }
};

class FakeBackend final : public rules::Backend {
  public:
    explicit FakeBackend(std::shared_ptr<BackendLog> log) : log_(std::move(log)) {}
    const char* name() const override { return "fake"; }
    Result<rules::SyncStats> sync(const rules::Plan& plan, const rules::Plan* previous) override {
        std::lock_guard lock(log_->mutex);
        log_->calls.push_back({plan, previous != nullptr});
        log_->changed.notify_all();
        if (std::exchange(log_->fail_next, false)) {
            return make_error(ErrorCode::kKernel, "injected failure");
        }
        return rules::SyncStats{previous == nullptr, 1, plan.services.size()};
    }
    Status cleanup() override { return {}; }
    Result<std::string> render_text(const rules::Plan&) override { return std::string("fake\n"); }

  private:
    std::shared_ptr<BackendLog> log_;
};

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
    auto debug = routes.at("/debug/services")();
    CHECK(debug.status == 200);
    CHECK(debug.body == rules::plan_to_json(second.plan));
    // The backend saw the call; the metrics follow when sync() returns.
    std::string metrics;
    for (int i = 0; i < 1000; ++i) {
        metrics = routes.at("/metrics")().body;
        if (metrics.find("kubeproxy_sync_partial_proxy_rules_duration_seconds_count 1\n") !=
            std::string::npos) {
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    CHECK(metrics.find("kubeproxy_sync_partial_proxy_rules_duration_seconds_count 1\n") !=
          std::string::npos);
    CHECK(metrics.find("kubeproxy_sync_full_proxy_rules_duration_seconds_count 1\n") !=
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
    // Bounded: the retry succeeds, so readiness follows as soon as sync() returns.
    for (int i = 0; i < 1000 && !daemon.first_sync_done(); ++i) std::this_thread::sleep_for(10ms);
    CHECK(daemon.first_sync_done());
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

TEST_CASE("modes that are not built yet are a runtime error") {
    CHECK(backend_factory(ProxyMode::kNftables).ok());
    CHECK(backend_factory(ProxyMode::kIptables).ok());
    auto ipvs = backend_factory(ProxyMode::kIpvs);
    REQUIRE_FALSE(ipvs.ok());
    CHECK(ipvs.error().message == "--proxy-mode=ipvs is not available yet");
    CHECK(exit_code_for(ipvs.error()) == kExitFailure);
}

TEST_CASE("--nodeport-addresses=primary reads the Node's first InternalIP per family") {
    watch::Snapshot snapshot;
    auto node = std::make_shared<watch::Node>();
    node->meta.name = "node-a";
    node->addresses = {{"Hostname", "node-a"},
                       {"InternalIP", "192.168.1.5"},
                       {"InternalIP", "192.168.1.6"},
                       {"ExternalIP", "203.0.113.5"},
                       {"InternalIP", "fd00::5"}};
    snapshot.nodes[{"", "node-a"}] = node;
    auto prefixes = primary_node_prefixes(snapshot, "node-a");
    CHECK(prefixes ==
          std::vector<Prefix>{*Prefix::parse("192.168.1.5/32"), *Prefix::parse("fd00::5/128")});
    CHECK(primary_node_prefixes(snapshot, "node-b").empty());
}
