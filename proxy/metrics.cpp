#include "proxy/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sb::proxy {

void append_header(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string format_value(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    if (value == std::floor(value) && std::fabs(value) < 1e15) {
        return fmt::format("{}", static_cast<int64_t>(value));
    }
    return fmt::format("{}", value);  // shortest text that reads back exactly
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

std::vector<double> Histogram::exponential_buckets(double start, double factor, int count) {
    std::vector<double> bounds;
    double bound = start;
    for (int i = 0; i < count; ++i, bound *= factor) bounds.push_back(bound);
    return bounds;
}

void Histogram::observe(double value) {
    // The first bucket whose upper bound is >= value ("le" is inclusive).
    size_t bucket = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) -
                                        bounds_.begin());
    std::lock_guard lock(mutex_);
    ++counts_[bucket];
    sum_ += value;
    ++count_;
}

uint64_t Histogram::count() const {
    std::lock_guard lock(mutex_);
    return count_;
}

void Histogram::append_samples(std::string& out, std::string_view name) const {
    std::lock_guard lock(mutex_);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); ++i) {
        cumulative += counts_[i];
        out +=
            fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, format_value(bounds_[i]), cumulative);
    }
    cumulative += counts_.back();
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
    out += fmt::format("{}_sum {}\n", name, format_value(sum_));
    out += fmt::format("{}_count {}\n", name, count_);
}

ProxyMetrics::ProxyMetrics()
    : sync_duration(Histogram::exponential_buckets(0.001, 2, 15)),
      full_sync_duration(Histogram::exponential_buckets(0.001, 2, 15)),
      partial_sync_duration(Histogram::exponential_buckets(0.001, 2, 15)) {}

namespace {

void append_histogram(std::string& out, std::string_view name, std::string_view help,
                      const Histogram& histogram) {
    append_header(out, name, help, "histogram");
    histogram.append_samples(out, name);
}

void append_single(std::string& out, std::string_view name, std::string_view help,
                   std::string_view type, double value) {
    append_header(out, name, help, type);
    out += fmt::format("{} {}\n", name, format_value(value));
}

}  // namespace

void ProxyMetrics::append(std::string& out, std::string_view version,
                          std::string_view proxy_mode) const {
    append_histogram(out, "kubeproxy_sync_proxy_rules_duration_seconds",
                     "SyncProxyRules latency in seconds", sync_duration);
    append_histogram(out, "kubeproxy_sync_full_proxy_rules_duration_seconds",
                     "SyncProxyRules latency in seconds for full resyncs", full_sync_duration);
    append_histogram(out, "kubeproxy_sync_partial_proxy_rules_duration_seconds",
                     "SyncProxyRules latency in seconds for partial resyncs",
                     partial_sync_duration);
    append_single(out, "kubeproxy_sync_proxy_rules_last_timestamp_seconds",
                  "The last time proxy rules were successfully synced", "gauge",
                  last_sync_timestamp.value());
    append_single(out, "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
                  "The last time a sync of proxy rules was queued", "gauge",
                  last_queued_timestamp.value());
    append_single(out, "kubeproxy_sync_proxy_rules_service_changes_total",
                  "Cumulative proxy rules Service changes", "counter",
                  static_cast<double>(service_changes.value()));
    append_single(out, "kubeproxy_sync_proxy_rules_endpoint_changes_total",
                  "Cumulative proxy rules Endpoint changes", "counter",
                  static_cast<double>(endpoint_changes.value()));
    append_header(out, "kubeproxy_sync_proxy_rules_no_local_endpoints_total",
                  "Number of services with a Local traffic policy and no endpoints", "gauge");
    out += fmt::format(
        "kubeproxy_sync_proxy_rules_no_local_endpoints_total{{traffic_policy=\"internal\"}} {}\n",
        format_value(no_local_endpoints_internal.value()));
    out += fmt::format(
        "kubeproxy_sync_proxy_rules_no_local_endpoints_total{{traffic_policy=\"external\"}} {}\n",
        format_value(no_local_endpoints_external.value()));
    append_single(out, "switchboard_sync_errors_total",
                  "Syncs of the proxy rules that failed (each is retried)", "counter",
                  static_cast<double>(sync_errors.value()));
    append_single(out, "switchboard_health_check_port_errors_total",
                  "Health-check node ports that could not be opened", "counter",
                  static_cast<double>(health_check_errors.value()));
    append_single(out, "switchboard_plan_service_ports", "Service ports in the last computed plan",
                  "gauge", plan_service_ports.value());
    append_header(out, "switchboard_build_info", "switchboard's version and proxy mode", "gauge");
    out += fmt::format("switchboard_build_info{{version=\"{}\",proxy_mode=\"{}\"}} 1\n", version,
                       proxy_mode);
}

}  // namespace sb::proxy
