// The option table's rows of kube-proxy's options without effect here
// (proxy/options/rows_ignored.h).
#include "proxy/options/rows_ignored.h"

#include <optional>
#include <string_view>

namespace sb::proxy {

namespace {

// A kube-proxy flag and field without meaning here.
OptionSpec ignored(std::vector<std::string_view> names, ValueKind kind, std::string_view why,
                   std::vector<ConfigField> fields = {},
                   std::optional<std::string_view> kube_proxy_default = std::nullopt) {
    return OptionSpec{.names = std::move(names),
                      .kind = kind,
                      .role = OptionRole::kIgnored,
                      .default_text = kube_proxy_default,
                      .help = why,
                      .fields = std::move(fields)};
}

constexpr std::string_view kNoLogging =
    "switchboard logs to stderr through spdlog; only -v sets its level";

}  // namespace

std::vector<OptionSpec> ignored_rows() {
    std::vector<OptionSpec> table;
    table.push_back(ignored({"--feature-gates"}, ValueKind::kString,
                            "switchboard has no feature gates", {{.path = "featureGates"}}));
    table.push_back(ignored({"--profiling"}, ValueKind::kBool, "switchboard serves no /debug/pprof",
                            {{.path = "enableProfiling"}}, "false"));
    table.push_back(ignored({"--kube-api-qps"}, ValueKind::kString,
                            "switchboard's only requests are one LIST and WATCH per resource",
                            {{.path = "clientConnection.qps"}}, "5"));
    table.push_back(ignored({"--kube-api-burst"}, ValueKind::kInt,
                            "switchboard's only requests are one LIST and WATCH per resource",
                            {{.path = "clientConnection.burst"}}, "10"));
    table.push_back(ignored(
        {"--kube-api-content-type"}, ValueKind::kString, "switchboard reads the API server's JSON",
        {{.path = "clientConnection.contentType"}}, "application/vnd.kubernetes.protobuf"));
    table.push_back(ignored({}, ValueKind::kString, "switchboard reads the API server's JSON",
                            {{.path = "clientConnection.acceptContentTypes"}}));
    table.push_back(ignored({"--config-sync-period"}, ValueKind::kDuration,
                            "switchboard watches without periodic resyncs of its informers",
                            {{.path = "configSyncPeriod"}}, "15m0s"));
    table.push_back(ignored({"--show-hidden-metrics-for-version"}, ValueKind::kString,
                            "switchboard hides no metrics",
                            {{.path = "showHiddenMetricsForVersion"}}));
    table.push_back(ignored({}, ValueKind::kBool,
                            "switchboard masquerades to the outgoing interface's address",
                            {{.path = "iptables.snatNodeInternalIP"}}));
    // v1alpha2 only: kube-proxy reads it once, to log rather than exit when
    // its node IPs disagree with the cluster CIDRs' families (checkIPConfig).
    table.push_back(ignored({}, ValueKind::kBool,
                            "switchboard makes no node IP consistency check to soften",
                            {{.path = "configHardFail"}}, "true"));
    table.push_back(ignored({}, ValueKind::kString, "the user-space proxy is gone (kube-proxy too)",
                            {{.path = "portRange"}}));
    table.push_back(ignored({}, ValueKind::kMap, "Windows only", {{.path = "winkernel"}}));
    table.push_back(
        ignored({}, ValueKind::kBool, "Windows only", {{.path = "windowsRunAsService"}}));
    table.push_back(
        ignored({"--vmodule"}, ValueKind::kList, kNoLogging, {{.path = "logging.vmodule"}}));
    table.push_back(ignored({"--log-flush-frequency"}, ValueKind::kDuration, kNoLogging,
                            {{.path = "logging.flushFrequency"}}, "5s"));
    table.push_back(ignored({"--logging-format"}, ValueKind::kString, kNoLogging,
                            {{.path = "logging.format"}}, "text"));
    table.push_back(ignored({}, ValueKind::kMap, kNoLogging, {{.path = "logging.options"}}));
    for (std::string_view name :
         {"--log-json-info-buffer-size", "--log-text-info-buffer-size", "--log-backtrace-at",
          "--log-dir", "--log-file", "--log-file-max-size", "--stderrthreshold"}) {
        table.push_back(ignored({name}, ValueKind::kString, kNoLogging));
    }
    for (std::string_view name : {"--log-json-split-stream", "--log-text-split-stream",
                                  "--add-dir-header", "--alsologtostderr", "--logtostderr",
                                  "--one-output", "--skip-headers", "--skip-log-headers"}) {
        table.push_back(ignored({name}, ValueKind::kBool, kNoLogging));
    }

    // kube-proxy's options switchboard cannot honour.
    table.push_back({
        .names = {"--write-config-to"},
        .role = OptionRole::kRefused,
        .help = "switchboard does not write kube-proxy configuration files",
    });
    return table;
}

}  // namespace sb::proxy
