// Prometheus metrics of the daemon, in the text exposition format (0.0.4).
//
// Counter, Gauge and Histogram are lock-free or internally locked and may be
// updated from any thread while another thread renders them. Names follow
// kube-proxy's where the meaning matches (kubeproxy_sync_proxy_rules_*), so
// existing dashboards and alerts keep working.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace sb::proxy {

// One metric family's "# HELP" and "# TYPE" lines.
void append_header(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type);
// A sample value as Prometheus prints it: integers without a fraction,
// "+Inf" / "-Inf" / "NaN" spelled out.
std::string format_value(double value);

class Counter {
  public:
    void inc(uint64_t amount = 1) { value_.fetch_add(amount, std::memory_order_relaxed); }
    uint64_t value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> value_{0};
};

class Gauge {
  public:
    void set(double value) { value_.store(value, std::memory_order_relaxed); }
    double value() const { return value_.load(std::memory_order_relaxed); }

  private:
    std::atomic<double> value_{0};
};

class Histogram {
  public:
    // `bounds`: the upper bounds of the buckets, ascending (+Inf is implied).
    explicit Histogram(std::vector<double> bounds);
    // kube-proxy's buckets for sync durations: 1 ms doubling 15 times.
    static std::vector<double> exponential_buckets(double start, double factor, int count);

    void observe(double value);
    // The _bucket, _sum and _count samples (no HELP/TYPE lines).
    void append_samples(std::string& out, std::string_view name) const;
    uint64_t count() const;

  private:
    const std::vector<double> bounds_;
    mutable std::mutex mutex_;
    std::vector<uint64_t> counts_;  // per bucket, not cumulative
    double sum_ = 0;
    uint64_t count_ = 0;
};

// The daemon's own metrics.
struct ProxyMetrics {
    ProxyMetrics();

    Histogram sync_duration;          // kubeproxy_sync_proxy_rules_duration_seconds
    Histogram full_sync_duration;     // kubeproxy_sync_full_proxy_rules_duration_seconds
    Histogram partial_sync_duration;  // kubeproxy_sync_partial_proxy_rules_duration_seconds
    Gauge last_sync_timestamp;        // kubeproxy_sync_proxy_rules_last_timestamp_seconds
    Gauge last_queued_timestamp;      // kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds
    Counter service_changes;          // kubeproxy_sync_proxy_rules_service_changes_total
    Counter endpoint_changes;         // kubeproxy_sync_proxy_rules_endpoint_changes_total
    // kubeproxy_sync_proxy_rules_no_local_endpoints_total{traffic_policy=internal|external}:
    // service ports with a Local policy and no local endpoint, in the last plan.
    Gauge no_local_endpoints_internal;
    Gauge no_local_endpoints_external;
    Counter sync_errors;          // switchboard_sync_errors_total
    Counter health_check_errors;  // switchboard_health_check_port_errors_total
    Gauge plan_service_ports;     // switchboard_plan_service_ports

    // Every metric above plus switchboard_build_info, HELP/TYPE included.
    void append(std::string& out, std::string_view version, std::string_view proxy_mode) const;
};

}  // namespace sb::proxy
