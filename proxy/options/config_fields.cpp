#include "proxy/options/config_fields.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/ip.h"
#include "base/quote.h"

namespace sb::proxy {

namespace {

constexpr uint8_t kIptablesOrNftables = kIptablesSection | kNftablesSection;

// One v1alpha2 field: its path, the row it feeds (a flag name, or the
// v1alpha1 path of a row without one) and how it is read.
struct V1alpha2Field {
    std::string_view path;
    std::string_view row;
    uint8_t sections = kEverySection;
    bool zero_is_absent = false;
    std::optional<ValueKind> kind = std::nullopt;
    // v1alpha2's default where it is not the row's (v1alpha1's) default.
    std::optional<std::string_view> absent_value = std::nullopt;
};

// kube-proxy's v1alpha2 types (staging/src/k8s.io/kube-proxy/config/
// v1alpha2/types.go) and their defaulting (pkg/proxy/apis/config/v1alpha2/
// defaults.go): the same rows as v1alpha1's twins; the sync periods are one
// top-level pair for every mode (0s means the default, ipvs's too), the
// masquerade bit one per mode, masqueradeAll, conntrack and oomScoreAdj
// under linux. The bind fields are is_v1alpha2_bind_field's.
const std::vector<V1alpha2Field> kV1alpha2Fields = {
    {.path = "featureGates", .row = "--feature-gates"},
    {.path = "clientConnection.kubeconfig", .row = "--kubeconfig", .zero_is_absent = true},
    {.path = "clientConnection.qps", .row = "--kube-api-qps"},
    {.path = "clientConnection.burst", .row = "--kube-api-burst"},
    {.path = "clientConnection.contentType", .row = "--kube-api-content-type"},
    {.path = "clientConnection.acceptContentTypes", .row = "clientConnection.acceptContentTypes"},
    {.path = "logging.verbosity", .row = "--v"},
    {.path = "logging.format", .row = "--logging-format"},
    {.path = "logging.flushFrequency", .row = "--log-flush-frequency"},
    {.path = "logging.vmodule", .row = "--vmodule"},
    {.path = "logging.options", .row = "logging.options"},
    {.path = "hostnameOverride", .row = "--hostname-override"},
    {.path = "bindAddressHardFail", .row = "--bind-address-hard-fail"},
    {.path = "configHardFail", .row = "configHardFail"},
    {.path = "enableProfiling", .row = "--profiling"},
    {.path = "showHiddenMetricsForVersion", .row = "--show-hidden-metrics-for-version"},
    {.path = "mode", .row = "--proxy-mode", .zero_is_absent = true},
    {.path = "linux.conntrack.maxPerCore", .row = "--conntrack-max-per-core"},
    {.path = "linux.conntrack.min", .row = "--conntrack-min"},
    {.path = "linux.conntrack.tcpEstablishedTimeout", .row = "--conntrack-tcp-timeout-established"},
    {.path = "linux.conntrack.tcpCloseWaitTimeout", .row = "--conntrack-tcp-timeout-close-wait"},
    {.path = "linux.conntrack.tcpBeLiberal", .row = "--conntrack-tcp-be-liberal"},
    {.path = "linux.conntrack.udpTimeout", .row = "--conntrack-udp-timeout"},
    {.path = "linux.conntrack.udpStreamTimeout", .row = "--conntrack-udp-timeout-stream"},
    {.path = "linux.masqueradeAll", .row = "--masquerade-all"},
    {.path = "linux.oomScoreAdj", .row = "--oom-score-adj"},
    {.path = "windows.runAsService", .row = "windowsRunAsService"},
    {.path = "iptables.masqueradeBit",
     .row = "--iptables-masquerade-bit",
     .sections = kIptablesSection},
    {.path = "iptables.localhostNodePorts",
     .row = "--iptables-localhost-nodeports",
     .absent_value = "false"},
    {.path = "ipvs.masqueradeBit", .row = "--iptables-masquerade-bit", .sections = kIpvsSection},
    {.path = "ipvs.scheduler", .row = "--ipvs-scheduler", .zero_is_absent = true},
    {.path = "ipvs.excludeCIDRs", .row = "--ipvs-exclude-cidrs"},
    {.path = "ipvs.strictARP", .row = "--ipvs-strict-arp"},
    {.path = "ipvs.tcpTimeout", .row = "--ipvs-tcp-timeout"},
    {.path = "ipvs.tcpFinTimeout", .row = "--ipvs-tcpfin-timeout"},
    {.path = "ipvs.udpTimeout", .row = "--ipvs-udp-timeout"},
    {.path = "nftables.masqueradeBit",
     .row = "--iptables-masquerade-bit",
     .sections = kNftablesSection},
    {.path = "winkernel", .row = "winkernel"},
    {.path = "detectLocalMode", .row = "--detect-local-mode", .zero_is_absent = true},
    {.path = "detectLocal.bridgeInterface", .row = "--pod-bridge-interface"},
    {.path = "detectLocal.interfaceNamePrefix", .row = "--pod-interface-name-prefix"},
    {.path = "detectLocal.clusterCIDRs", .row = "--cluster-cidr", .kind = ValueKind::kList},
    {.path = "nodePortAddresses", .row = "--nodeport-addresses"},
    {.path = "syncPeriod",
     .row = "--iptables-sync-period",
     .sections = kIptablesOrNftables,
     .zero_is_absent = true},
    {.path = "syncPeriod",
     .row = "--ipvs-sync-period",
     .sections = kIpvsSection,
     .zero_is_absent = true},
    {.path = "minSyncPeriod",
     .row = "--iptables-min-sync-period",
     .sections = kIptablesOrNftables,
     .zero_is_absent = true},
    {.path = "minSyncPeriod",
     .row = "--ipvs-min-sync-period",
     .sections = kIpvsSection,
     .zero_is_absent = true},
    {.path = "configSyncPeriod", .row = "--config-sync-period"},
};

// Fields of rows that only v1alpha2 has (kube-proxy's v1alpha1 decodes
// them as unknown).
constexpr std::string_view kOnlyV1alpha2[] = {"configHardFail"};

const OptionSpec& row_named(std::string_view name) {
    if (name.starts_with('-')) return *find_flag(name);
    for (const auto& spec : option_table()) {
        for (const auto& field : spec.fields) {
            if (field.path == name) return spec;
        }
    }
    // The tables are constants: a missing row is a programming error.
    std::abort();
}

std::vector<VersionField> build_v1alpha1() {
    std::vector<VersionField> fields;
    for (const auto& spec : option_table()) {
        for (size_t i = 0; i < spec.fields.size(); ++i) {
            const auto& field = spec.fields[i];
            if (std::find(std::begin(kOnlyV1alpha2), std::end(kOnlyV1alpha2), field.path) !=
                std::end(kOnlyV1alpha2)) {
                continue;
            }
            fields.push_back(VersionField{&spec, field, i});
        }
    }
    return fields;
}

std::vector<VersionField> build_v1alpha2() {
    std::vector<VersionField> fields;
    for (const auto& entry : kV1alpha2Fields) {
        const OptionSpec& spec = row_named(entry.row);
        size_t order = 0;
        for (const auto& earlier : fields) order += earlier.spec == &spec ? 1 : 0;
        fields.push_back(VersionField{&spec,
                                      ConfigField{.path = entry.path,
                                                  .sections = entry.sections,
                                                  .zero_is_absent = entry.zero_is_absent,
                                                  .absent_value = entry.absent_value},
                                      order, entry.kind});
    }
    // By row in table order, as v1alpha1's: values come out in that order.
    std::stable_sort(fields.begin(), fields.end(),
                     [](const auto& a, const auto& b) { return a.spec < b.spec; });
    return fields;
}

}  // namespace

const std::vector<VersionField>& config_fields(ConfigVersion version) {
    static const std::vector<VersionField> v1alpha1 = build_v1alpha1();
    static const std::vector<VersionField> v1alpha2 = build_v1alpha2();
    return version == ConfigVersion::kV1alpha1 ? v1alpha1 : v1alpha2;
}

bool is_v1alpha2_bind_field(std::string_view path) {
    for (std::string_view bind : {"nodeIPOverride", "healthzBindAddresses", "healthzBindPort",
                                  "metricsBindAddresses", "metricsBindPort"}) {
        if (path == bind) return true;
    }
    return false;
}

Result<std::string> v1alpha2_bind_address(const std::vector<std::string>& addresses, bool any,
                                          IpFamily primary) {
    std::set<std::string> kinds;
    std::string host;
    for (const auto& text : addresses) {
        auto prefix = Prefix::parse(text);
        if (!prefix) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("{} is not a CIDR", quote_for_message(text)));
        }
        const bool v4 = prefix->family() == IpFamily::kV4;
        const int length = prefix->length();
        if (length == 0) {
            kinds.insert(v4 ? "any4" : "any6");
        } else if (prefix->address().is_loopback() && length == (v4 ? 8 : 128)) {
            kinds.insert(v4 ? "loopback4" : "loopback6");
        } else if (length == (v4 ? 32 : 128) && addresses.size() == 1) {
            host = prefix->address().to_string();
        } else {
            kinds.insert("other");
        }
    }
    if (!host.empty()) return host;
    if (addresses.empty()) {
        kinds = any ? std::set<std::string>{"any4", "any6"}
                    : std::set<std::string>{"loopback4", "loopback6"};
    }
    const bool v6 = primary == IpFamily::kV6;
    using Kinds = std::set<std::string>;
    if (kinds == Kinds{"any4"}) return std::string("0.0.0.0");
    if (kinds == Kinds{"any6"}) return std::string("::");
    if (kinds == Kinds{"any4", "any6"}) return std::string(v6 ? "::" : "0.0.0.0");
    if (kinds == Kinds{"loopback4"}) return std::string("127.0.0.1");
    if (kinds == Kinds{"loopback6"}) return std::string("::1");
    if (kinds == Kinds{"loopback4", "loopback6"}) return std::string(v6 ? "::1" : "127.0.0.1");
    return make_error(
        ErrorCode::kInvalidArgument,
        fmt::format("{}: switchboard listens on one address: give one /32 or /128, 0.0.0.0/0 "
                    "and/or ::/0, or 127.0.0.0/8 and/or ::1/128",
                    quote_for_message(fmt::format("{}", fmt::join(addresses, ", ")))));
}

std::string_view first_field_path(const OptionSpec& spec, ConfigVersion version) {
    for (const auto& entry : config_fields(version)) {
        if (entry.spec == &spec) return entry.field.path;
    }
    return {};
}

}  // namespace sb::proxy
