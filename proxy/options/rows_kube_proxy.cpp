// The option table's rows of kube-proxy's options (proxy/options/option_table.h):
// the mode, the source, local traffic and masquerading, ipvs, sync periods,
// the HTTP servers and the node's settings; and the rows that pick what the
// process does (the one-shot runs, -v, --help, --version).
#include "proxy/options/rows_kube_proxy.h"

#include <cctype>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>

#include <fmt/format.h>

#include "base/go_duration.h"
#include "base/quote.h"
#include "base/text.h"
#include "proxy/options/value_checks.h"
#include "rules/validate.h"

namespace sb::proxy {

namespace {

using std::chrono::nanoseconds;

// A bind address; "" or a port of 0 from the deprecated --*-port flag turn
// the server off.
Result<std::optional<HostPort>> parse_bind_address(std::string_view text,
                                                   std::optional<uint16_t> port_flag,
                                                   uint16_t default_port) {
    // kube-proxy takes IP or IP:PORT here; "[IPv6]" is neither (its flag and
    // its file's validation refuse it), whatever --*-port says.
    if (text.starts_with('[') && text.ends_with(']')) {
        return invalid_value(fmt::format("{} is not IP or IP:PORT (brackets only with a port)",
                                         quote_for_message(text)));
    }
    if (text.empty() || port_flag == uint16_t{0}) return std::optional<HostPort>();
    auto address = parse_host_port(text, port_flag.value_or(default_port));
    if (!address) return address.error();
    return std::optional<HostPort>(*address);
}

Result<nanoseconds> parse_period(std::string_view text) {
    auto duration = parse_go_duration(text);
    if (!duration) return duration.error();
    if (duration->count() < 0) {
        return invalid_value(fmt::format("{} is negative", quote_for_message(text)));
    }
    return *duration;
}

// A Linux interface name as the kernel takes it (dev_valid_name): 1-15
// bytes, no '/', no whitespace, no NUL, not "." or "..".
Status check_interface_name(std::string_view name) {
    if (name.empty() || name.size() > 15) {
        return invalid_value(
            fmt::format("{} is not an interface name (1-15 characters)", quote_for_message(name)));
    }
    if (name == "." || name == "..") {
        return invalid_value(fmt::format("{} is not an interface name", quote_for_message(name)));
    }
    for (char c : name) {
        if (c == '/' || c == '\0' || std::isspace(static_cast<unsigned char>(c))) {
            return invalid_value(
                fmt::format("{} is not an interface name (no '/', whitespace or NUL)",
                            quote_for_message(name)));
        }
    }
    // What the backends accept (their text forms also refuse ':', '"', '*'
    // and '+'): the flag is refused here rather than at the first sync.
    if (auto status = rules::validate_interface_name(name); !status) {
        return invalid_value(status.error().message);
    }
    return {};
}

// The interface of the detect-local mode `mode`; kube-proxy validates only
// the one of the mode in use. An empty one is refused by check_combinations
// (proxy/options/flags.cpp), which can say where the mode was set.
Status store_local_interface(std::string_view text, ApplyContext& context,
                             rules::LocalDetectMode mode) {
    auto& backend = context.options.backend;
    if (backend.local_detect_mode != mode || text.empty()) return {};
    if (auto status = check_interface_name(text); !status) return status;
    backend.local_interface = text;
    return {};
}

// An int32 of ConntrackOptions, >= 0 (kube-proxy's validation).
template <int32_t ConntrackOptions::*member>
Status store_conntrack_count(std::string_view text, ApplyContext& context) {
    auto value = parse_integer(text, 0, INT32_MAX);
    if (!value) return value.error();
    context.options.conntrack.*member = static_cast<int32_t>(*value);
    return {};
}

template <nanoseconds ConntrackOptions::*member>
Status store_conntrack_timeout(std::string_view text, ApplyContext& context) {
    auto value = parse_period(text);
    if (!value) return value.error();
    context.options.conntrack.*member = *value;
    return {};
}

// IPVS takes whole seconds (IPVS_CMD_ATTR_TIMEOUT_*, u32); a fraction is
// rounded down, as kube-proxy's conversion does.
template <uint32_t rules::BackendOptions::*member>
Status store_ipvs_timeout(std::string_view text, ApplyContext& context) {
    auto value = parse_period(text);
    if (!value) return value.error();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*value).count();
    if (seconds > std::numeric_limits<int32_t>::max()) {
        return invalid_value(
            fmt::format("{} is longer than IPVS keeps a timeout", quote_for_message(text)));
    }
    context.options.backend.*member = static_cast<uint32_t>(seconds);
    return {};
}

Status store_min_sync_period(std::string_view text, ApplyContext& context) {
    auto value = parse_period(text);
    if (!value) return value.error();
    context.options.min_sync_period = *value;
    return {};
}

Status store_sync_period(std::string_view text, ApplyContext& context) {
    auto value = parse_period(text);
    if (!value) return value.error();
    context.options.sync_period = *value;
    return {};
}

Status store_port_flag(std::string_view text, std::optional<uint16_t>& port) {
    auto value = parse_integer(text, 0, 65535);
    if (!value) return value.error();
    port = static_cast<uint16_t>(*value);
    return {};
}

// An option that only validates: its effect is taken by parse_flags before
// the table is applied (--config, --help, --version).
Status validate_bool(std::string_view text, ApplyContext&) {
    auto value = parse_bool_value(text);
    if (!value) return value.error();
    return {};
}

bool outside_ipvs(ProxyMode mode) {
    return mode != ProxyMode::kIpvs;
}
bool in_ipvs(ProxyMode mode) {
    return mode == ProxyMode::kIpvs;
}

constexpr uint8_t kIptablesOrIpvs = kIptablesSection | kIpvsSection;

// Where the rules go and where Services come from; --proxy-mode first: rows
// after it read the mode.
void add_source_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--proxy-mode"},
        .default_text = "nftables",
        .help = "nftables, iptables or ipvs (kube-proxy's empty mode means nftables here)",
        .fields = {{.path = "mode", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (auto status = check_one_of(text, {"nftables", "iptables", "ipvs"}); !status) {
                return status;
            }
            context.options.proxy_mode = text == "iptables" ? ProxyMode::kIptables
                                         : text == "ipvs"   ? ProxyMode::kIpvs
                                                            : ProxyMode::kNftables;
            return {};
        },
    });
    table.push_back({
        .names = {"--config"},
        .role = OptionRole::kCommandLine,
        .help = "kube-proxy's KubeProxyConfiguration file (v1alpha1 or v1alpha2, YAML or JSON)",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.config_file = text;
            return {};
        },
    });
    table.push_back({
        .names = {"--source"},
        .role = OptionRole::kCommandLine,
        .default_text = "kubernetes",
        .help = "kubernetes (the API server) or file:PATH (a JSON file or folder of them)",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (text.rfind("file:", 0) == 0) {
                context.options.source_file = text.substr(5);
                if (context.options.source_file.empty()) return invalid_value("file: needs a PATH");
                return {};
            }
            if (text != "kubernetes") {
                return invalid_value(
                    fmt::format("{} is not one of kubernetes, file:PATH", quote_for_message(text)));
            }
            context.options.source_file.clear();
            return {};
        },
    });
    table.push_back({
        .names = {"--state-dir"},
        .role = OptionRole::kCommandLine,
        .default_text = "/run/switchboard",
        .help = "folder of the node state kept across restarts (a hostPath on tmpfs); empty: none",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (!text.empty() && text.front() != '/') {
                return invalid_value(
                    fmt::format("{} is not an absolute path", quote_for_message(text)));
            }
            context.options.state_dir = std::string(text);
            return {};
        },
    });
    table.push_back({
        .names = {"--kubeconfig"},
        .default_text = "",
        .help = "kubeconfig file; empty: in-cluster config",
        .fields = {{.path = "clientConnection.kubeconfig", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.kubeconfig = text;
            return {};
        },
    });
    table.push_back({
        .names = {"--master"},
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "API server address; overrides the kubeconfig's",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.master = text;
            return {};
        },
    });
    table.push_back({
        .names = {"--hostname-override"},
        .role = OptionRole::kCommandLineWins,
        .default_text = "",
        .help = "this node's name; else $NODE_NAME, else the host name",
        .fields = {{.path = "hostnameOverride"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            // kube-proxy refuses a name of blanks (its flag's and its file's)
            // rather than fall back to the host name; empty means unset.
            auto name = trim_lower(text);
            if (name.empty() && !text.empty()) {
                return invalid_value(
                    fmt::format("{} is blank: an empty name is invalid", quote_for_message(text)));
            }
            context.options.node_name = std::move(name);
            return {};
        },
    });
}

// Which traffic is local, what is masqueraded, where NodePorts answer.
void add_local_traffic_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--cluster-cidr"},
        .default_text = "",
        .help = "Pod CIDRs (comma-separated, one per family): with --detect-local-mode="
                "ClusterCIDR, traffic to Services from outside them is masqueraded",
        .fields = {{.path = "clusterCIDR"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto cidrs = parse_prefix_list(text);
            if (!cidrs) return cidrs.error();
            size_t v4 = 0;
            for (const auto& prefix : *cidrs) v4 += prefix.family() == IpFamily::kV4 ? 1 : 0;
            if (v4 > 1 || cidrs->size() - v4 > 1) {
                return invalid_value(
                    fmt::format("{} has more than one CIDR of a family", quote_for_message(text)));
            }
            context.options.backend.cluster_cidrs = std::move(*cidrs);
            return {};
        },
    });
    table.push_back({
        .names = {"--detect-local-mode"},
        .default_text = "ClusterCIDR",
        .help = "how traffic from local Pods is told: ClusterCIDR, NodeCIDR (this Node's "
                "spec.podCIDRs), BridgeInterface or InterfaceNamePrefix",
        .fields = {{.path = "detectLocalMode", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            using rules::LocalDetectMode;
            if (auto status = check_one_of(
                    text, {"ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix"});
                !status) {
                return status;
            }
            context.options.backend.local_detect_mode =
                text == "NodeCIDR"              ? LocalDetectMode::kNodeCidr
                : text == "BridgeInterface"     ? LocalDetectMode::kBridgeInterface
                : text == "InterfaceNamePrefix" ? LocalDetectMode::kInterfaceNamePrefix
                                                : LocalDetectMode::kClusterCidr;
            return {};
        },
    });
    // The interface of the mode in use; kube-proxy validates only that one.
    table.push_back({
        .names = {"--pod-bridge-interface"},
        .default_text = "",
        .help = "with --detect-local-mode=BridgeInterface: the bridge local Pods are on",
        .fields = {{.path = "detectLocal.bridgeInterface"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            return store_local_interface(text, context, rules::LocalDetectMode::kBridgeInterface);
        },
    });
    table.push_back({
        .names = {"--pod-interface-name-prefix"},
        .default_text = "",
        .help = "with --detect-local-mode=InterfaceNamePrefix: the name prefix of local Pods' "
                "interfaces",
        .fields = {{.path = "detectLocal.interfaceNamePrefix"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            return store_local_interface(text, context,
                                         rules::LocalDetectMode::kInterfaceNamePrefix);
        },
    });
    table.push_back({
        .names = {"--masquerade-all"},
        .kind = ValueKind::kBool,
        .default_text = "false",
        .help = "masquerade all traffic to Services",
        .fields = {{.path = "iptables.masqueradeAll", .sections = kIptablesOrIpvs},
                   {.path = "nftables.masqueradeAll", .sections = kNftablesSection}},
        .apply = store_bool_in<&Options::backend, &rules::BackendOptions::masquerade_all>,
    });
    // kube-proxy reads it whatever the mode; only its iptables mode uses it.
    table.push_back({
        .names = {"--iptables-localhost-nodeports"},
        .kind = ValueKind::kBool,
        .default_text = "true",
        .help = "iptables mode, IPv4: NodePorts answer on 127.0.0.1 too when --nodeport-addresses "
                "holds loopback (sets net.ipv4.conf.all.route_localnet=1)",
        .fields = {{.path = "iptables.localhostNodePorts"}},
        .apply = store_bool_in<&Options::backend, &rules::BackendOptions::localhost_node_ports>,
    });
    table.push_back({
        .names = {"--iptables-masquerade-bit", "--masquerade-bit"},
        .kind = ValueKind::kInt,
        .default_text = "14",
        .help = "bit of the fwmark that marks packets to masquerade, 0-31 (every mode)",
        .fields = {{.path = "iptables.masqueradeBit", .sections = kIptablesOrIpvs},
                   {.path = "nftables.masqueradeBit", .sections = kNftablesSection}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto bit = parse_integer(text, 0, 31);
            if (!bit) return bit.error();
            context.options.backend.masquerade_mark = uint32_t{1} << *bit;
            return {};
        },
    });
    table.push_back({
        .names = {"--nodeport-addresses"},
        .kind = ValueKind::kList,
        .default_text = "",
        .help = "CIDRs (comma-separated) of the node addresses NodePorts answer on, or "
                "\"primary\"; empty: all, or primary when the mode is named nftables",
        .fields = {{.path = "nodePortAddresses"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.nodeport_primary = trim_lower(text) == "primary";
            context.options.backend.nodeport_addresses.clear();
            if (context.options.nodeport_primary) return {};
            auto prefixes = parse_prefix_list(text);
            if (!prefixes) return prefixes.error();
            context.options.backend.nodeport_addresses = std::move(*prefixes);
            return {};
        },
    });
}

// The ipvs mode's scheduler, exclusions, ARP settings and timeouts.
void add_ipvs_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--ipvs-scheduler"},
        .default_text = "rr",
        .help = "rr, lc, dh, sh, sed or nq",
        .fields = {{.path = "ipvs.scheduler", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (auto status = check_one_of(text, {"rr", "lc", "dh", "sh", "sed", "nq"}); !status) {
                return status;
            }
            context.options.backend.ipvs_scheduler = text;
            return {};
        },
    });
    table.push_back({
        .names = {"--ipvs-exclude-cidrs"},
        .kind = ValueKind::kList,
        .default_text = "",
        .help = "CIDRs (comma-separated) whose IPVS virtual servers switchboard never touches",
        .fields = {{.path = "ipvs.excludeCIDRs"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto cidrs = parse_prefix_list(text);
            if (!cidrs) return cidrs.error();
            context.options.backend.ipvs_exclude_cidrs = std::move(*cidrs);
            return {};
        },
    });
    table.push_back({
        .names = {"--ipvs-strict-arp"},
        .kind = ValueKind::kBool,
        .default_text = "false",
        .help = "ipvs mode: set arp_ignore=1 and arp_announce=2 on all interfaces",
        .fields = {{.path = "ipvs.strictARP"}},
        .apply = store_bool_in<&Options::backend, &rules::BackendOptions::ipvs_strict_arp>,
    });
    table.push_back({
        .names = {"--ipvs-tcp-timeout"},
        .kind = ValueKind::kDuration,
        .default_text = "0s",
        .help = "ipvs mode: idle timeout of IPVS TCP connections; 0: the kernel's",
        .fields = {{.path = "ipvs.tcpTimeout"}},
        .apply = store_ipvs_timeout<&rules::BackendOptions::ipvs_tcp_timeout_seconds>,
    });
    table.push_back({
        .names = {"--ipvs-tcpfin-timeout"},
        .kind = ValueKind::kDuration,
        .default_text = "0s",
        .help = "ipvs mode: timeout of IPVS TCP connections after a FIN; 0: the kernel's",
        .fields = {{.path = "ipvs.tcpFinTimeout"}},
        .apply = store_ipvs_timeout<&rules::BackendOptions::ipvs_tcp_fin_timeout_seconds>,
    });
    table.push_back({
        .names = {"--ipvs-udp-timeout"},
        .kind = ValueKind::kDuration,
        .default_text = "0s",
        .help = "ipvs mode: timeout of IPVS UDP flows; 0: the kernel's",
        .fields = {{.path = "ipvs.udpTimeout"}},
        .apply = store_ipvs_timeout<&rules::BackendOptions::ipvs_udp_timeout_seconds>,
    });
}

// When to sync: kube-proxy reads the pair of the mode in use. The top-level
// syncPeriod / minSyncPeriod (v1alpha2's spelling) are read too; a field
// listed earlier wins over a later one.
void add_sync_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--iptables-min-sync-period", "--min-sync-period"},
        .kind = ValueKind::kDuration,
        .default_text = "1s",
        .help = "least time between two syncs, nftables and iptables mode (Go duration)",
        .fields = {{.path = "iptables.minSyncPeriod",
                    .sections = kIptablesSection,
                    .zero_is_absent = true},
                   {.path = "nftables.minSyncPeriod",
                    .sections = kNftablesSection,
                    .zero_is_absent = true},
                   {.path = "minSyncPeriod",
                    .sections = kIptablesSection | kNftablesSection,
                    .zero_is_absent = true}},
        .apply = store_min_sync_period,
        .applies_in = outside_ipvs,
    });
    table.push_back({
        .names = {"--iptables-sync-period", "--sync-period"},
        .kind = ValueKind::kDuration,
        .default_text = "30s",
        .help = "period of the periodic syncs (partial, with a drift check), nftables and "
                "iptables mode (Go duration)",
        .fields =
            {{.path = "iptables.syncPeriod", .sections = kIptablesSection, .zero_is_absent = true},
             {.path = "nftables.syncPeriod", .sections = kNftablesSection, .zero_is_absent = true},
             {.path = "syncPeriod",
              .sections = kIptablesSection | kNftablesSection,
              .zero_is_absent = true}},
        .apply = store_sync_period,
        .applies_in = outside_ipvs,
    });
    // switchboard's own: kube-proxy's is the constant proxyutil.FullSyncPeriod.
    table.push_back({
        .names = {"--full-sync-period"},
        .kind = ValueKind::kDuration,
        .role = OptionRole::kCommandLine,
        .default_text = "1h",
        .help = "period of full syncs (the whole ruleset read back and rewritten), every mode (Go "
                "duration)",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto value = parse_period(text);
            if (!value) return value.error();
            context.options.full_sync_period = *value;
            return {};
        },
    });
    table.push_back({
        .names = {"--ipvs-min-sync-period"},
        .kind = ValueKind::kDuration,
        .default_text = "1s",
        .help = "least time between two syncs, ipvs mode (Go duration)",
        .fields = {{.path = "ipvs.minSyncPeriod", .sections = kIpvsSection, .absent_value = "0s"},
                   {.path = "minSyncPeriod", .sections = kIpvsSection}},
        .apply = store_min_sync_period,
        .applies_in = in_ipvs,
    });
    table.push_back({
        .names = {"--ipvs-sync-period"},
        .kind = ValueKind::kDuration,
        .default_text = "30s",
        .help = "period of the periodic syncs (partial, with a drift check), ipvs mode (Go "
                "duration)",
        .fields = {{.path = "ipvs.syncPeriod", .sections = kIpvsSection, .zero_is_absent = true},
                   {.path = "syncPeriod", .sections = kIpvsSection, .zero_is_absent = true}},
        .apply = store_sync_period,
        .applies_in = in_ipvs,
    });
}

// The HTTP servers. The deprecated port flags come first: the bind addresses
// read them.
void add_http_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--healthz-port"},
        .kind = ValueKind::kInt,
        .help = "deprecated (kube-proxy): port of a --healthz-bind-address without one; 0: off",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            return store_port_flag(text, context.healthz_port);
        },
    });
    table.push_back({
        .names = {"--metrics-port"},
        .kind = ValueKind::kInt,
        .help = "deprecated (kube-proxy): port of a --metrics-bind-address without one; 0: off",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            return store_port_flag(text, context.metrics_port);
        },
    });
    table.push_back({
        .names = {"--bind-address"},
        .default_text = "0.0.0.0",
        .help = "this node's primary IP (a hint of its primary family); 0.0.0.0 or ::: none",
        .fields = {{.path = "bindAddress", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto address = IpAddress::parse(text);
            if (!address) {
                return invalid_value(
                    fmt::format("{} is not an IP address", quote_for_message(text)));
            }
            context.options.bind_address = *address;
            return {};
        },
    });
    table.push_back({
        .names = {"--metrics-bind-address"},
        .default_text = "127.0.0.1:10249",
        .help = "ADDR[:PORT] of /metrics, /debug/services, /proxyMode, /readyz; empty: off",
        .fields = {{.path = "metricsBindAddress", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto bind = parse_bind_address(text, context.metrics_port, kDefaultMetricsPort);
            if (!bind) return bind.error();
            context.options.metrics_bind = *bind;
            return {};
        },
    });
    table.push_back({
        .names = {"--healthz-bind-address"},
        .default_text = "0.0.0.0:10256",
        .help = "ADDR[:PORT] of /healthz and /livez; empty: off",
        .fields = {{.path = "healthzBindAddress", .zero_is_absent = true}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto bind = parse_bind_address(text, context.healthz_port, kDefaultHealthzPort);
            if (!bind) return bind.error();
            context.options.healthz_bind = *bind;
            return {};
        },
    });
    table.push_back({
        .names = {"--bind-address-hard-fail"},
        .kind = ValueKind::kBool,
        .default_text = "false",
        .help = "exit when the healthz or metrics port cannot be bound (else: retry)",
        .fields = {{.path = "bindAddressHardFail"}},
        .apply = store_bool<&Options::bind_address_hard_fail>,
    });
}

// Node settings, applied at start (proxy/app/node_setup).
void add_node_rows(std::vector<OptionSpec>& table) {
    table.push_back({
        .names = {"--conntrack-max-per-core"},
        .kind = ValueKind::kInt,
        .default_text = "32768",
        .help = "conntrack entries per CPU (nf_conntrack_max); 0: leave the limit alone",
        .fields = {{.path = "conntrack.maxPerCore"}},
        .apply = store_conntrack_count<&ConntrackOptions::max_per_core>,
    });
    table.push_back({
        .names = {"--conntrack-min"},
        .kind = ValueKind::kInt,
        .default_text = "131072",
        .help = "least nf_conntrack_max, whatever --conntrack-max-per-core gives",
        .fields = {{.path = "conntrack.min"}},
        .apply = store_conntrack_count<&ConntrackOptions::min>,
    });
    table.push_back({
        .names = {"--conntrack-tcp-timeout-established"},
        .kind = ValueKind::kDuration,
        .default_text = "24h0m0s",
        .help = "idle timeout of established TCP connections; 0: leave alone",
        .fields = {{.path = "conntrack.tcpEstablishedTimeout"}},
        .apply = store_conntrack_timeout<&ConntrackOptions::tcp_established_timeout>,
    });
    table.push_back({
        .names = {"--conntrack-tcp-timeout-close-wait"},
        .kind = ValueKind::kDuration,
        .default_text = "1h0m0s",
        .help = "timeout of TCP connections in CLOSE_WAIT; 0: leave alone",
        .fields = {{.path = "conntrack.tcpCloseWaitTimeout"}},
        .apply = store_conntrack_timeout<&ConntrackOptions::tcp_close_wait_timeout>,
    });
    table.push_back({
        .names = {"--conntrack-tcp-be-liberal"},
        .kind = ValueKind::kBool,
        .default_text = "false",
        .help = "set nf_conntrack_tcp_be_liberal (out-of-window packets are not INVALID)",
        .fields = {{.path = "conntrack.tcpBeLiberal"}},
        .apply = store_bool_in<&Options::conntrack, &ConntrackOptions::tcp_be_liberal>,
    });
    table.push_back({
        .names = {"--conntrack-udp-timeout"},
        .kind = ValueKind::kDuration,
        .default_text = "0s",
        .help = "idle timeout of UNREPLIED UDP flows; 0: leave alone",
        .fields = {{.path = "conntrack.udpTimeout"}},
        .apply = store_conntrack_timeout<&ConntrackOptions::udp_timeout>,
    });
    table.push_back({
        .names = {"--conntrack-udp-timeout-stream"},
        .kind = ValueKind::kDuration,
        .default_text = "0s",
        .help = "idle timeout of ASSURED UDP flows; 0: leave alone",
        .fields = {{.path = "conntrack.udpStreamTimeout"}},
        .apply = store_conntrack_timeout<&ConntrackOptions::udp_stream_timeout>,
    });
    table.push_back({
        .names = {"--oom-score-adj"},
        .kind = ValueKind::kInt,
        .default_text = "-999",
        .help = "this process's oom_score_adj, -1000 to 1000",
        .fields = {{.path = "oomScoreAdj"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto value = parse_integer(text, -1000, 1000);
            if (!value) return value.error();
            context.options.oom_score_adj = static_cast<int>(*value);
            return {};
        },
    });
}

}  // namespace

std::vector<OptionSpec> kube_proxy_rows() {
    std::vector<OptionSpec> table;
    for (auto add : {add_source_rows, add_local_traffic_rows, add_ipvs_rows, add_sync_rows,
                     add_http_rows, add_node_rows}) {
        add(table);
    }
    return table;
}

std::vector<OptionSpec> run_rows() {
    std::vector<OptionSpec> table;
    table.push_back({
        .names = {"--dry-run"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .default_text = "false",
        .help = "print the rules for the current state and exit",
        .apply = store_bool<&Options::dry_run>,
    });
    table.push_back({
        .names = {"--cleanup"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .default_text = "false",
        .help = "remove every kernel object switchboard made and exit",
        .apply = store_bool<&Options::cleanup>,
    });
    table.push_back({
        .names = {"--cleanup-kube-proxy"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .default_text = "false",
        .help = "remove what kube-proxy left in the kernel (any mode) and exit",
        .apply = store_bool<&Options::cleanup_kube_proxy>,
    });
    table.push_back({
        .names = {"--init-only"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .default_text = "false",
        .help = "apply the node settings that need root (conntrack sysctls) and exit",
        .apply = store_bool<&Options::init_only>,
    });
    table.push_back({
        .names = {"--v", "-v"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLineWins,
        .default_text = "0",
        .help = "log verbosity (2 and above: debug)",
        .fields = {{.path = "logging.verbosity"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto verbosity = parse_integer(text, 0, 10);
            if (!verbosity) return verbosity.error();
            context.options.verbosity = static_cast<int>(*verbosity);
            return {};
        },
    });
    table.push_back({
        .names = {"--help", "-h"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .help = "print this text and exit",
        .apply = validate_bool,
    });
    table.push_back({
        .names = {"--version"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .help = "print the version and exit",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (text == "raw") return {};  // kube-proxy's --version=raw
            return validate_bool(text, context);
        },
    });
    return table;
}

}  // namespace sb::proxy
