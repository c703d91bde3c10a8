#include "proxy/http/metrics.h"

#include <sys/utsname.h>

#include <fmt/format.h>

#include <cctype>
#include <utility>
#include <vector>

#include "proxy/sync/change_tracker.h"

namespace sb::proxy {

namespace {

using metrics::Family;
using metrics::Type;

const Family kSyncDuration{"kubeproxy_sync_proxy_rules_duration_seconds",
                           "SyncProxyRules latency in seconds",
                           Type::kHistogram,
                           {"ip_family"}};
const Family kFullSyncDuration{"kubeproxy_sync_full_proxy_rules_duration_seconds",
                               "SyncProxyRules latency in seconds for full resyncs",
                               Type::kHistogram,
                               {"ip_family"}};
const Family kPartialSyncDuration{"kubeproxy_sync_partial_proxy_rules_duration_seconds",
                                  "SyncProxyRules latency in seconds for partial resyncs",
                                  Type::kHistogram,
                                  {"ip_family"}};
const Family kNetworkProgrammingDuration{"kubeproxy_network_programming_duration_seconds",
                                         "In Cluster Network Programming Latency in seconds",
                                         Type::kHistogram,
                                         {"ip_family"}};
const Family kLastSyncTimestamp{"kubeproxy_sync_proxy_rules_last_timestamp_seconds",
                                "The last time proxy rules were successfully synced",
                                Type::kGauge,
                                {"ip_family"}};
const Family kLastQueuedTimestamp{"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
                                  "The last time a sync of proxy rules was queued",
                                  Type::kGauge,
                                  {"ip_family"}};
const Family kNoLocalEndpoints{"kubeproxy_sync_proxy_rules_no_local_endpoints_total",
                               "Number of services with a Local traffic policy and no endpoints",
                               Type::kGauge,
                               {"ip_family", "traffic_policy"}};
const Family kEndpointChangesPending{"kubeproxy_sync_proxy_rules_endpoint_changes_pending",
                                     "Pending proxy rules Endpoint changes",
                                     Type::kGauge,
                                     {}};
const Family kServiceChangesPending{"kubeproxy_sync_proxy_rules_service_changes_pending",
                                    "Pending proxy rules Service changes",
                                    Type::kGauge,
                                    {}};
const Family kEndpointChanges{"kubeproxy_sync_proxy_rules_endpoint_changes_total",
                              "Cumulative proxy rules Endpoint changes",
                              Type::kCounter,
                              {}};
const Family kServiceChanges{"kubeproxy_sync_proxy_rules_service_changes_total",
                             "Cumulative proxy rules Service changes",
                             Type::kCounter,
                             {}};
const Family kHealthzTotal{"kubeproxy_proxy_healthz_total",
                           "Cumulative proxy healthz HTTP status",
                           Type::kCounter,
                           {"code"}};
const Family kLivezTotal{
    "kubeproxy_proxy_livez_total", "Cumulative proxy livez HTTP status", Type::kCounter, {"code"}};
const Family kNftablesSyncFailures{"kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
                                   "Cumulative proxy nftables sync failures",
                                   Type::kCounter,
                                   {"ip_family"}};
const Family kNftablesCleanupFailures{"kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total",
                                      "Cumulative proxy nftables cleanup failures",
                                      Type::kCounter,
                                      {"ip_family"}};
const Family kIptablesRestoreFailures{"kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
                                      "Cumulative proxy iptables restore failures",
                                      Type::kCounter,
                                      {"ip_family"}};
const Family kIptablesPartialRestoreFailures{
    "kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total",
    "Cumulative proxy iptables partial restore failures",
    Type::kCounter,
    {"ip_family"}};
const Family kKubernetesBuildInfo{
    "kubernetes_build_info",
    "A metric with a constant '1' value labeled by major, minor, git version, git commit, git "
    "tree state, build date, Go version, and compiler from which Kubernetes was built, and "
    "platform on which it is running.",
    Type::kGauge,
    {"build_date", "compiler", "git_commit", "git_tree_state", "git_version", "go_version", "major",
     "minor", "platform"}};
const Family kSwitchboardBuildInfo{"switchboard_build_info",
                                   "switchboard's version and proxy mode",
                                   Type::kGauge,
                                   {"version", "proxy_mode"}};
const Family kSyncErrors{"switchboard_sync_errors_total",
                         "Syncs of the proxy rules that failed (each is retried)",
                         Type::kCounter,
                         {}};
const Family kHealthCheckErrors{"switchboard_health_check_port_errors_total",
                                "Health-check node ports that could not be opened",
                                Type::kCounter,
                                {}};
const Family kKernelDrift{"switchboard_sync_kernel_drift_total",
                          "Periodic syncs that found switchboard's kernel objects removed or "
                          "replaced by someone else, and synced in full",
                          Type::kCounter,
                          {}};
const Family kPlanServicePorts{
    "switchboard_plan_service_ports", "Service ports in the last computed plan", Type::kGauge, {}};

// kube-proxy's sync duration buckets: 1 ms doubling 15 times.
std::vector<double> sync_buckets() {
    return metrics::exponential_buckets(0.001, 2, 15);
}

// The label value of each family.
const std::array<std::string, 2> kFamilyLabels = {to_string(IpFamily::kV4),
                                                  to_string(IpFamily::kV6)};

// GOARCH's name for uname's machine.
std::string go_arch(std::string_view machine) {
    if (machine == "x86_64") return "amd64";
    if (machine == "aarch64" || machine == "arm64") return "arm64";
    if (machine == "i386" || machine == "i686") return "386";
    if (machine.starts_with("arm")) return "arm";
    return std::string(machine);
}

// "1.2.3" -> {"1", "2"}; a missing part is empty.
std::pair<std::string, std::string> major_minor(std::string_view version) {
    const auto first = version.find('.');
    if (first == std::string_view::npos) return {std::string(version), ""};
    const auto second = version.find('.', first + 1);
    return {std::string(version.substr(0, first)),
            std::string(version.substr(first + 1, second == std::string_view::npos
                                                      ? std::string_view::npos
                                                      : second - first - 1))};
}

}  // namespace

std::vector<double> network_programming_buckets() {
    std::vector<double> bounds{0};  // merge() starts from a slice holding one 0
    for (const auto& part :
         {metrics::linear_buckets(0.25, 0.25, 2), metrics::linear_buckets(1, 1, 59),
          metrics::linear_buckets(60, 5, 12), metrics::linear_buckets(120, 30, 7)}) {
        bounds.insert(bounds.end(), part.begin(), part.end());
    }
    return bounds;
}

BuildInfo current_build_info(std::string_view version) {
    BuildInfo info;
    info.version = std::string(version);
#if defined(__clang__)
    info.compiler = "clang";
    info.compiler_version =
        fmt::format("{}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
    info.compiler = "gcc";
    info.compiler_version = fmt::format("{}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
    info.compiler = "unknown";
#endif
    utsname name{};
    if (::uname(&name) == 0) {
        std::string os = name.sysname;
        for (char& c : os) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        info.platform = os + "/" + go_arch(name.machine);
    }
    return info;
}

ProxyMetrics::ProxyMetrics(ProxyMode mode)
    : mode_(mode),
      sync_duration_(kSyncDuration, sync_buckets()),
      full_sync_duration_(kFullSyncDuration, sync_buckets()),
      partial_sync_duration_(kPartialSyncDuration, sync_buckets()),
      network_programming_duration_(kNetworkProgrammingDuration, network_programming_buckets()),
      last_sync_timestamp_(kLastSyncTimestamp),
      last_queued_timestamp_(kLastQueuedTimestamp),
      no_local_endpoints_(kNoLocalEndpoints),
      healthz_total_(kHealthzTotal),
      livez_total_(kLivezTotal),
      sync_failures_(mode == ProxyMode::kIptables ? kIptablesRestoreFailures
                                                  : kNftablesSyncFailures),
      partial_sync_failures_(kIptablesPartialRestoreFailures),
      nftables_cleanup_failures_(kNftablesCleanupFailures) {
    // Every per-family series from the start, at 0 (both families always).
    for (const auto& family : kFamilyLabels) {
        for (auto* histogram : {&sync_duration_, &full_sync_duration_, &partial_sync_duration_,
                                &network_programming_duration_}) {
            histogram->with({family});
        }
        last_sync_timestamp_.with({family});
        last_queued_timestamp_.with({family});
        no_local_endpoints_.with({family, "internal"});
        no_local_endpoints_.with({family, "external"});
        sync_failures_.with({family});
        partial_sync_failures_.with({family});
        nftables_cleanup_failures_.with({family});
    }
}

void ProxyMetrics::observe_sync(double seconds, bool full, double now_unix) {
    for (const auto& family : kFamilyLabels) {
        sync_duration_.with({family}).observe(seconds);
        (full ? full_sync_duration_ : partial_sync_duration_).with({family}).observe(seconds);
        last_sync_timestamp_.with({family}).set(now_unix);
    }
}

void ProxyMetrics::count_sync_failure(bool partial) {
    sync_errors.inc();
    for (const auto& family : kFamilyLabels) {
        sync_failures_.with({family}).inc();
        if (partial) partial_sync_failures_.with({family}).inc();
    }
}

void ProxyMetrics::queued(double now_unix) {
    for (const auto& family : kFamilyLabels) last_queued_timestamp_.with({family}).set(now_unix);
}

void ProxyMetrics::observe_network_programming(double seconds) {
    for (const auto& family : kFamilyLabels) {
        network_programming_duration_.with({family}).observe(seconds);
    }
}

void ProxyMetrics::set_no_local_endpoints(IpFamily family, uint64_t internal, uint64_t external) {
    const std::string label = to_string(family);
    no_local_endpoints_.with({label, "internal"}).set(static_cast<double>(internal));
    no_local_endpoints_.with({label, "external"}).set(static_cast<double>(external));
}

void ProxyMetrics::count_healthz(unsigned status) {
    healthz_total_.with({std::to_string(status)}).inc();
}

void ProxyMetrics::count_livez(unsigned status) {
    livez_total_.with({std::to_string(status)}).inc();
}

void ProxyMetrics::write(metrics::TextWriter& out, const BuildInfo& build,
                         const PendingChanges& pending) const {
    sync_duration_.write(out);
    full_sync_duration_.write(out);
    partial_sync_duration_.write(out);
    network_programming_duration_.write(out);
    last_sync_timestamp_.write(out);
    last_queued_timestamp_.write(out);
    no_local_endpoints_.write(out);
    out.family(kEndpointChangesPending);
    out.sample({}, pending.endpoint_slices);
    out.family(kServiceChangesPending);
    out.sample({}, pending.services);
    metrics::write_metric(out, kEndpointChanges, endpoint_changes);
    metrics::write_metric(out, kServiceChanges, service_changes);
    healthz_total_.write(out);
    livez_total_.write(out);
    // kube-proxy registers the failure counters of its mode only.
    if (mode_ == ProxyMode::kNftables || mode_ == ProxyMode::kIptables) sync_failures_.write(out);
    if (mode_ == ProxyMode::kIptables) partial_sync_failures_.write(out);
    if (mode_ == ProxyMode::kNftables) nftables_cleanup_failures_.write(out);

    // switchboard is not built with Go: go_version names the C++ toolchain
    // that built it, and the git fields it does not know are empty.
    const auto [major, minor] = major_minor(build.version);
    out.family(kKubernetesBuildInfo);
    out.sample({"", build.compiler, "", "", "v" + build.version,
                build.compiler + " " + build.compiler_version, major, minor, build.platform},
               uint64_t{1});
    out.family(kSwitchboardBuildInfo);
    out.sample({build.version, to_string(mode_)}, uint64_t{1});
    metrics::write_metric(out, kSyncErrors, sync_errors);
    metrics::write_metric(out, kHealthCheckErrors, health_check_errors);
    metrics::write_metric(out, kKernelDrift, kernel_drift);
    metrics::write_metric(out, kPlanServicePorts, plan_service_ports);
}

}  // namespace sb::proxy
