// The daemon's metrics: kube-proxy's names, types, buckets and labels, the
// process collector set and the build info.
#include <unistd.h>

#include <catch.hpp>

#include <filesystem>
#include <fstream>

#include "proxy/http/backend_metrics.h"
#include "proxy/http/metrics.h"
#include "proxy/http/process_metrics.h"
#include "proxy/sync/change_tracker.h"
#include "tests/unit/exposition.h"

using namespace sb;
using namespace sb::proxy;
using sb::testing::parse_exposition;

namespace {

const BuildInfo kBuild{"1.2.3", "gcc", "12.2.0", "linux/amd64"};

testing::Exposition written(const ProxyMetrics& metrics, PendingChanges pending = {}) {
    metrics::TextWriter out;
    metrics.write(out, kBuild, pending);
    auto parsed = parse_exposition(out.text());
    INFO(out.text());
    for (const auto& problem : parsed.problems) FAIL_CHECK(problem);
    return parsed;
}

}  // namespace

TEST_CASE("kube-proxy's families with their types, per IP family from the start") {
    ProxyMetrics metrics(ProxyMode::kNftables);
    auto out = written(metrics);
    const std::pair<const char*, const char*> families[] = {
        {"kubeproxy_sync_proxy_rules_duration_seconds", "histogram"},
        {"kubeproxy_sync_full_proxy_rules_duration_seconds", "histogram"},
        {"kubeproxy_sync_partial_proxy_rules_duration_seconds", "histogram"},
        {"kubeproxy_network_programming_duration_seconds", "histogram"},
        {"kubeproxy_sync_proxy_rules_last_timestamp_seconds", "gauge"},
        {"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", "gauge"},
        {"kubeproxy_sync_proxy_rules_no_local_endpoints_total", "gauge"},
        {"kubeproxy_sync_proxy_rules_endpoint_changes_pending", "gauge"},
        {"kubeproxy_sync_proxy_rules_service_changes_pending", "gauge"},
        {"kubeproxy_sync_proxy_rules_endpoint_changes_total", "counter"},
        {"kubeproxy_sync_proxy_rules_service_changes_total", "counter"},
        {"kubeproxy_proxy_healthz_total", "counter"},
        {"kubeproxy_proxy_livez_total", "counter"},
        {"kubeproxy_sync_proxy_rules_nftables_sync_failures_total", "counter"},
        {"kubernetes_build_info", "gauge"},
        {"switchboard_build_info", "gauge"},
        {"switchboard_sync_errors_total", "counter"},
        {"switchboard_health_check_port_errors_total", "counter"},
        {"switchboard_plan_service_ports", "gauge"},
    };
    for (const auto& [name, type] : families) {
        INFO(name);
        REQUIRE(out.has_family(name));
        CHECK(out.families.at(name).type == type);
    }
    CHECK(out.families.at("kubeproxy_proxy_healthz_total").help ==
          "Cumulative proxy healthz HTTP status");
    for (const char* family : {"IPv4", "IPv6"}) {
        const std::string label = std::string("ip_family=\"") + family + "\"";
        CHECK(out.value("kubeproxy_sync_proxy_rules_duration_seconds_count{" + label + "}") == 0);
        CHECK(out.value("kubeproxy_sync_proxy_rules_last_timestamp_seconds{" + label + "}") == 0);
        CHECK(out.value("kubeproxy_sync_proxy_rules_no_local_endpoints_total{" + label +
                        ",traffic_policy=\"internal\"}") == 0);
        CHECK(out.value("kubeproxy_sync_proxy_rules_nftables_sync_failures_total{" + label + "}") ==
              0);
    }
    CHECK_FALSE(out.has_family("kubeproxy_sync_proxy_rules_iptables_restore_failures_total"));
}

TEST_CASE(
    "nftables mode has kube-proxy's cleanup failure counter, at 0: stale chains go in "
    "the sync's batch") {
    auto nftables = written(ProxyMetrics(ProxyMode::kNftables));
    const std::string name = "kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total";
    REQUIRE(nftables.has_family(name));
    CHECK(nftables.families.at(name).type == "counter");
    CHECK(nftables.families.at(name).help == "Cumulative proxy nftables cleanup failures");
    for (const char* family : {"IPv4", "IPv6"}) {
        CHECK(nftables.value(name + "{ip_family=\"" + family + "\"}") == 0);
    }
    for (ProxyMode other : {ProxyMode::kIptables, ProxyMode::kIpvs}) {
        CHECK_FALSE(written(ProxyMetrics(other)).has_family(name));
    }
}

TEST_CASE("iptables mode has kube-proxy's rule gauges per family and table, from the syncs") {
    const auto exposition = [](const BackendMetrics& backend) {
        metrics::TextWriter out;
        backend.write(out);
        auto parsed = parse_exposition(out.text());
        for (const auto& problem : parsed.problems) FAIL_CHECK(problem);
        return parsed;
    };
    BackendMetrics iptables(true);
    auto at_start = exposition(iptables);
    for (const char* name : {"kubeproxy_sync_proxy_rules_iptables_total",
                             "kubeproxy_sync_proxy_rules_iptables_last"}) {
        INFO(name);
        REQUIRE(at_start.has_family(name));
        CHECK(at_start.families.at(name).type == "gauge");
        CHECK(at_start.value(std::string(name) + "{ip_family=\"IPv6\",table=\"nat\"}") == 0);
    }
    CHECK(at_start.families.at("kubeproxy_sync_proxy_rules_iptables_total").help ==
          "Total number of iptables rules owned by kube-proxy");
    CHECK(at_start.families.at("kubeproxy_sync_proxy_rules_iptables_last").help ==
          "Number of iptables rules written by kube-proxy in last sync");

    rules::SyncStats stats;
    stats.iptables_rules = {{IpFamily::kV4, "nat", 120, 7},
                            {IpFamily::kV4, "filter", 9, 0},
                            {IpFamily::kV6, "nat", 40, 40}};
    iptables.record(stats);
    auto out = exposition(iptables);
    CHECK(
        out.value("kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv4\",table=\"nat\"}") ==
        120);
    CHECK(out.value("kubeproxy_sync_proxy_rules_iptables_last{ip_family=\"IPv4\",table=\"nat\"}") ==
          7);
    CHECK(out.value(
              "kubeproxy_sync_proxy_rules_iptables_total{ip_family=\"IPv4\",table=\"filter\"}") ==
          9);
    CHECK(out.value("kubeproxy_sync_proxy_rules_iptables_last{ip_family=\"IPv6\",table=\"nat\"}") ==
          40);

    // The other modes have none, as kube-proxy registers them in iptables
    // mode only.
    CHECK_FALSE(
        exposition(BackendMetrics(false)).has_family("kubeproxy_sync_proxy_rules_iptables_total"));
}

TEST_CASE("syncs, failures, queues and probes move their series for both families") {
    ProxyMetrics metrics(ProxyMode::kNftables);
    metrics.observe_sync(0.003, true, 1700000000.5);
    metrics.observe_sync(0.0015, false, 1700000001);
    metrics.queued(1700000002.25);
    metrics.count_sync_failure(true);
    metrics.set_no_local_endpoints(IpFamily::kV6, 2, 1);
    metrics.service_changes.inc(3);
    metrics.endpoint_changes.inc();
    metrics.count_healthz(200);
    metrics.count_healthz(503);
    metrics.count_healthz(503);
    metrics.count_livez(200);
    auto out = written(metrics, PendingChanges{4, 7});
    for (const std::string family : {"IPv4", "IPv6"}) {
        const std::string l = "ip_family=\"" + family + "\"";
        CHECK(out.value("kubeproxy_sync_proxy_rules_duration_seconds_count{" + l + "}") == 2);
        CHECK(out.value("kubeproxy_sync_proxy_rules_duration_seconds_bucket{" + l +
                        ",le=\"0.002\"}") == 1);
        CHECK(out.value("kubeproxy_sync_proxy_rules_duration_seconds_bucket{" + l +
                        ",le=\"0.004\"}") == 2);
        CHECK(out.value("kubeproxy_sync_full_proxy_rules_duration_seconds_count{" + l + "}") == 1);
        CHECK(out.value("kubeproxy_sync_partial_proxy_rules_duration_seconds_count{" + l + "}") ==
              1);
        CHECK(out.samples.at("kubeproxy_sync_proxy_rules_last_timestamp_seconds{" + l + "}") ==
              "1700000001");
        CHECK(out.samples.at("kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{" + l +
                             "}") == "1700000002.25");
        CHECK(out.value("kubeproxy_sync_proxy_rules_nftables_sync_failures_total{" + l + "}") == 1);
    }
    CHECK(out.value("kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family=\"IPv6\","
                    "traffic_policy=\"internal\"}") == 2);
    CHECK(out.value("kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family=\"IPv6\","
                    "traffic_policy=\"external\"}") == 1);
    CHECK(out.value("kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family=\"IPv4\","
                    "traffic_policy=\"external\"}") == 0);
    CHECK(out.value("kubeproxy_sync_proxy_rules_service_changes_total") == 3);
    CHECK(out.value("kubeproxy_sync_proxy_rules_endpoint_changes_total") == 1);
    CHECK(out.value("kubeproxy_sync_proxy_rules_service_changes_pending") == 4);
    CHECK(out.value("kubeproxy_sync_proxy_rules_endpoint_changes_pending") == 7);
    CHECK(out.value("kubeproxy_proxy_healthz_total{code=\"200\"}") == 1);
    CHECK(out.value("kubeproxy_proxy_healthz_total{code=\"503\"}") == 2);
    CHECK(out.value("kubeproxy_proxy_livez_total{code=\"200\"}") == 1);
    CHECK_FALSE(out.value("kubeproxy_proxy_livez_total{code=\"503\"}"));
    CHECK(out.value("switchboard_sync_errors_total") == 1);
}

TEST_CASE("iptables mode has kube-proxy's restore failure counters, partial ones apart") {
    ProxyMetrics metrics(ProxyMode::kIptables);
    metrics.count_sync_failure(false);
    metrics.count_sync_failure(true);
    auto out = written(metrics);
    CHECK_FALSE(out.has_family("kubeproxy_sync_proxy_rules_nftables_sync_failures_total"));
    for (const std::string family : {"IPv4", "IPv6"}) {
        const std::string l = "{ip_family=\"" + family + "\"}";
        CHECK(out.value("kubeproxy_sync_proxy_rules_iptables_restore_failures_total" + l) == 2);
        CHECK(out.value("kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total" + l) ==
              1);
    }
    CHECK(out.value("switchboard_build_info{version=\"1.2.3\",proxy_mode=\"iptables\"}") == 1);
}

TEST_CASE("network programming buckets are kube-proxy's, the leading 0 included") {
    auto bounds = network_programming_buckets();
    REQUIRE(bounds.size() == 1 + 2 + 59 + 12 + 7);
    CHECK(bounds[0] == 0);
    CHECK(bounds[1] == 0.25);
    CHECK(bounds[2] == 0.5);
    CHECK(bounds[3] == 1);
    CHECK(bounds[61] == 59);
    CHECK(bounds[62] == 60);
    CHECK(bounds[73] == 115);
    CHECK(bounds[74] == 120);
    CHECK(bounds.back() == 300);
    CHECK(std::is_sorted(bounds.begin(), bounds.end()));

    ProxyMetrics metrics(ProxyMode::kNftables);
    metrics.observe_network_programming(1.5);
    metrics.observe_network_programming(-0.2);  // clock skew: kube-proxy's 0 bucket takes it
    auto out = written(metrics);
    const std::string name = "kubeproxy_network_programming_duration_seconds";
    CHECK(out.value(name + "_bucket{ip_family=\"IPv4\",le=\"0\"}") == 1);
    CHECK(out.value(name + "_bucket{ip_family=\"IPv4\",le=\"1\"}") == 1);
    CHECK(out.value(name + "_bucket{ip_family=\"IPv4\",le=\"2\"}") == 2);
    CHECK(out.value(name + "_bucket{ip_family=\"IPv6\",le=\"300\"}") == 2);
    CHECK(out.value(name + "_count{ip_family=\"IPv6\"}") == 2);
}

TEST_CASE("kubernetes_build_info is filled with what built switchboard") {
    ProxyMetrics metrics(ProxyMode::kNftables);
    auto out = written(metrics);
    CHECK(out.value("kubernetes_build_info{build_date=\"\",compiler=\"gcc\",git_commit=\"\","
                    "git_tree_state=\"\",git_version=\"v1.2.3\",go_version=\"gcc 12.2.0\","
                    "major=\"1\",minor=\"2\",platform=\"linux/amd64\"}") == 1);

    auto build = current_build_info("0.1.0");
    CHECK(build.version == "0.1.0");
    CHECK((build.compiler == "gcc" || build.compiler == "clang"));
    CHECK_FALSE(build.compiler_version.empty());
#if defined(__x86_64__)
    CHECK(build.platform == "linux/amd64");
#endif
}

namespace {

struct FakeProc {
    std::filesystem::path root;
    FakeProc() {
        char pattern[] = "/tmp/sb-unit-proc-XXXXXX";
        REQUIRE(mkdtemp(pattern) != nullptr);
        root = pattern;
        std::filesystem::create_directories(root / "self" / "fd");
    }
    ~FakeProc() { std::filesystem::remove_all(root); }
    void write(const std::string& path, const std::string& text) {
        std::ofstream(root / path) << text;
    }
};

}  // namespace

TEST_CASE("process metrics are read from procfs as client_golang reads them") {
    FakeProc proc;
    // comm with a space and a parenthesis; fields from 3 (state) on.
    std::string stat = "4242 (sw (x) board) S 1 4242 4242 0 -1 4194560 100 0 0 0 ";
    stat += "250 150 0 0 20 0 8 0 ";  // utime 250, stime 150 (fields 14, 15) ... 21
    stat += "1234 104857600 2560 ";   // starttime (22), vsize (23), rss pages (24)
    stat += "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
    proc.write("self/stat", stat);
    proc.write("stat", "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n");
    proc.write("self/limits",
               "Limit                     Soft Limit           Hard Limit           Units     \n"
               "Max cpu time              unlimited            unlimited            seconds   \n"
               "Max open files            1024                 1048576              files     \n"
               "Max address space         unlimited            unlimited            bytes     \n");
    for (const char* fd : {"0", "1", "2"}) proc.write(std::string("self/fd/") + fd, "");

    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    auto stats = read_process_stats(proc.root.string());
    CHECK(stats.cpu_seconds == Approx(400 / ticks));
    CHECK(stats.virtual_bytes == 104857600);
    CHECK(stats.resident_bytes == 2560 * page);
    CHECK(stats.start_time_seconds == Approx(1700000000 + 1234 / ticks));
    CHECK(stats.open_fds == 3);
    CHECK(stats.max_fds == 1024);
    CHECK(stats.virtual_max_bytes == 18446744073709551615.0);

    metrics::TextWriter out;
    write_process_metrics(out, stats);
    auto parsed = parse_exposition(out.text());
    CHECK(parsed.problems.empty());
    CHECK(parsed.families.at("process_cpu_seconds_total").type == "counter");
    CHECK(parsed.samples.at("process_virtual_memory_max_bytes") == "1.8446744073709552e+19");
    CHECK(parsed.value("process_open_fds") == 3);
    CHECK(parsed.value("process_max_fds") == 1024);
}

TEST_CASE("process metrics that cannot be read are left out") {
    FakeProc proc;
    std::filesystem::remove_all(proc.root / "self");
    auto stats = read_process_stats(proc.root.string());
    CHECK_FALSE(stats.cpu_seconds);
    CHECK_FALSE(stats.open_fds);
    metrics::TextWriter out;
    write_process_metrics(out, stats);
    CHECK(out.text().empty());

    // The real /proc: every value is there.
    auto real = read_process_stats();
    CHECK(real.cpu_seconds);
    CHECK(real.resident_bytes > 0);
    CHECK(real.open_fds > 0);
    CHECK(real.max_fds > 0);
    CHECK(real.start_time_seconds > 1e9);
}
