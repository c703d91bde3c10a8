// Prometheus text format of the daemon's metrics.
#include <catch.hpp>

#include <sstream>

#include "proxy/metrics.h"

using namespace sb::proxy;

namespace {

// The value of the sample line starting with `series ` (exact series).
std::string sample(const std::string& text, const std::string& series) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind(series + " ", 0) == 0) return line.substr(series.size() + 1);
    }
    return "<absent>";
}

}  // namespace

TEST_CASE("values print as Prometheus expects") {
    CHECK(format_value(0) == "0");
    CHECK(format_value(42) == "42");
    CHECK(format_value(0.25) == "0.25");
    CHECK(format_value(1.0 / 0.0) == "+Inf");
    CHECK(format_value(-1.0 / 0.0) == "-Inf");
    CHECK(format_value(0.0 / 0.0) == "NaN");
}

TEST_CASE("histogram buckets are cumulative with le inclusive") {
    Histogram histogram({0.1, 1, 10});
    histogram.observe(0.05);
    histogram.observe(1);  // on a bound: counted in le="1"
    histogram.observe(5);
    histogram.observe(50);
    std::string out;
    histogram.append_samples(out, "h");
    CHECK(out ==
          "h_bucket{le=\"0.1\"} 1\n"
          "h_bucket{le=\"1\"} 2\n"
          "h_bucket{le=\"10\"} 3\n"
          "h_bucket{le=\"+Inf\"} 4\n"
          "h_sum 56.05\n"
          "h_count 4\n");
    CHECK(histogram.count() == 4);
}

TEST_CASE("kube-proxy's sync duration buckets") {
    auto bounds = Histogram::exponential_buckets(0.001, 2, 15);
    REQUIRE(bounds.size() == 15);
    CHECK(bounds.front() == 0.001);
    CHECK(bounds.back() == Approx(16.384));
}

TEST_CASE("the daemon's metrics use kube-proxy's names with HELP and TYPE") {
    ProxyMetrics metrics;
    metrics.sync_duration.observe(0.003);
    metrics.full_sync_duration.observe(0.003);
    metrics.service_changes.inc(3);
    metrics.endpoint_changes.inc();
    metrics.sync_errors.inc(2);
    metrics.no_local_endpoints_external.set(1);
    metrics.last_sync_timestamp.set(1700000000.5);
    std::string out;
    metrics.append(out, "1.2.3", "nftables");

    CHECK(out.find("# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram\n") !=
          std::string::npos);
    CHECK(out.find("# HELP kubeproxy_sync_proxy_rules_duration_seconds ") != std::string::npos);
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_duration_seconds_count") == "1");
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.002\"}") == "0");
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_duration_seconds_bucket{le=\"0.004\"}") == "1");
    CHECK(sample(out, "kubeproxy_sync_full_proxy_rules_duration_seconds_count") == "1");
    CHECK(sample(out, "kubeproxy_sync_partial_proxy_rules_duration_seconds_count") == "0");
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_service_changes_total") == "3");
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_endpoint_changes_total") == "1");
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") == "1700000000.5");
    CHECK(sample(out, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds") == "0");
    CHECK(sample(
              out,
              "kubeproxy_sync_proxy_rules_no_local_endpoints_total{traffic_policy=\"external\"}") ==
          "1");
    CHECK(sample(
              out,
              "kubeproxy_sync_proxy_rules_no_local_endpoints_total{traffic_policy=\"internal\"}") ==
          "0");
    CHECK(sample(out, "switchboard_sync_errors_total") == "2");
    CHECK(sample(out, "switchboard_build_info{version=\"1.2.3\",proxy_mode=\"nftables\"}") == "1");
    CHECK(out.find("# TYPE switchboard_sync_errors_total counter\n") != std::string::npos);

    // Every sample line belongs to a family announced by a TYPE line before it.
    std::istringstream lines(out);
    std::string line;
    std::string family;
    while (std::getline(lines, line)) {
        if (line.rfind("# TYPE ", 0) == 0) {
            family = line.substr(7, line.find(' ', 7) - 7);
            continue;
        }
        if (line.rfind("# ", 0) == 0) continue;
        INFO(line);
        CHECK(!family.empty());
        CHECK(line.rfind(family, 0) == 0);
    }
}
