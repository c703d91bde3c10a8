#include "proxy/options/option_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <limits>

#include "base/go_duration.h"
#include "base/quote.h"
#include "base/text.h"
#include "rules/dns_local/addresses.h"
#include "rules/validate.h"

namespace sb::proxy {

namespace {

using std::chrono::nanoseconds;

Error invalid(std::string message) {
    return make_error(ErrorCode::kInvalidArgument, std::move(message));
}

// "one of a, b, c" membership with the contract's wording.
Status check_one_of(std::string_view value, std::initializer_list<std::string_view> allowed) {
    for (auto candidate : allowed) {
        if (value == candidate) return {};
    }
    std::string list;
    for (auto candidate : allowed) {
        if (!list.empty()) list += ", ";
        list += candidate;
    }
    return invalid(quote_for_message(value) + " is not one of " + list);
}

Result<std::vector<Prefix>> parse_prefix_list(std::string_view text) {
    std::vector<Prefix> prefixes;
    for (const auto& item : split_list(text)) {
        // kube-proxy parses these with ParseCIDRSloppy: host bits are allowed.
        auto prefix = Prefix::parse(item, /*allow_host_bits=*/true);
        if (!prefix) return invalid(quote_for_message(item) + " is not a CIDR");
        prefixes.push_back(*prefix);
    }
    return prefixes;
}

// A bind address; "" or a port of 0 from the deprecated --*-port flag turn
// the server off.
Result<std::optional<HostPort>> parse_bind_address(std::string_view text,
                                                   std::optional<uint16_t> port_flag,
                                                   uint16_t default_port) {
    if (text.empty() || port_flag == uint16_t{0}) return std::optional<HostPort>();
    auto address = parse_host_port(text, port_flag.value_or(default_port));
    if (!address) return address.error();
    return std::optional<HostPort>(*address);
}

// RFC 1123 labels separated by dots; a trailing dot is dropped.
Result<std::string> parse_domain(std::string_view text) {
    std::string domain = trim_lower(text);
    if (!domain.empty() && domain.back() == '.') domain.pop_back();
    auto bad = [&](const std::string& why) {
        return invalid(quote_for_message(text) + ": " + why);
    };
    if (domain.empty()) return bad("empty domain");
    if (domain.size() > 253) return bad("longer than 253 characters");
    size_t start = 0;
    while (start <= domain.size()) {
        size_t dot = std::min(domain.find('.', start), domain.size());
        std::string_view label = std::string_view(domain).substr(start, dot - start);
        start = dot + 1;
        if (label.empty() || label.size() > 63) return bad("labels must be 1-63 characters");
        if (label.front() == '-' || label.back() == '-')
            return bad("a label starts or ends with -");
        for (char c : label) {
            if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') {
                return bad("only letters, digits, - and . are allowed");
            }
        }
    }
    return domain;
}

Result<nanoseconds> parse_period(std::string_view text) {
    auto duration = parse_go_duration(text);
    if (!duration) return duration.error();
    if (duration->count() < 0) return invalid(quote_for_message(text) + " is negative");
    return *duration;
}

Result<bool> parse_bool(std::string_view text) {
    auto value = parse_bool_text(text);
    if (!value) return invalid(quote_for_message(text) + " is not a boolean (true or false)");
    return *value;
}

// A Linux interface name as the kernel takes it (dev_valid_name): 1-15
// bytes, no '/', no whitespace, no NUL, not "." or "..".
Status check_interface_name(std::string_view name) {
    if (name.empty() || name.size() > 15) {
        return invalid(quote_for_message(name) + " is not an interface name (1-15 characters)");
    }
    if (name == "." || name == "..")
        return invalid(quote_for_message(name) + " is not an interface name");
    for (char c : name) {
        if (c == '/' || c == '\0' || std::isspace(static_cast<unsigned char>(c))) {
            return invalid(quote_for_message(name) +
                           " is not an interface name (no '/', whitespace or NUL)");
        }
    }
    // What the backends accept (their text forms also refuse ':', '"', '*'
    // and '+'): the flag is refused here rather than at the first sync.
    if (auto status = rules::validate_interface_name(name); !status) {
        return invalid(status.error().message);
    }
    return {};
}

// The row of a bool stored in `member` of Options.
template <bool Options::*member>
Status store_bool(std::string_view text, ApplyContext& context) {
    auto value = parse_bool(text);
    if (!value) return value.error();
    context.options.*member = *value;
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
        return invalid(quote_for_message(text) + " is longer than IPVS keeps a timeout");
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
    auto value = parse_bool(text);
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

std::vector<OptionSpec> build_table() {
    std::vector<OptionSpec> table;
    // --- where the rules go and where Services come from
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
        .help = "kube-proxy's KubeProxyConfiguration file (v1alpha1, YAML or JSON)",
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
                if (context.options.source_file.empty()) return invalid("file: needs a PATH");
                return {};
            }
            if (text != "kubernetes") {
                return invalid(quote_for_message(text) + " is not one of kubernetes, file:PATH");
            }
            context.options.source_file.clear();
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
            context.options.node_name = trim_lower(text);
            return {};
        },
    });
    // --- which traffic is local, what is masqueraded
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
                return invalid(quote_for_message(text) + " has more than one CIDR of a family");
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
            auto& backend = context.options.backend;
            if (backend.local_detect_mode != rules::LocalDetectMode::kBridgeInterface) return {};
            if (text.empty())
                return invalid(
                    "must be set when the detect-local mode is "
                    "BridgeInterface");
            if (auto status = check_interface_name(text); !status) return status;
            backend.local_interface = text;
            return {};
        },
    });
    table.push_back({
        .names = {"--pod-interface-name-prefix"},
        .default_text = "",
        .help = "with --detect-local-mode=InterfaceNamePrefix: the name prefix of local Pods' "
                "interfaces",
        .fields = {{.path = "detectLocal.interfaceNamePrefix"}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto& backend = context.options.backend;
            if (backend.local_detect_mode != rules::LocalDetectMode::kInterfaceNamePrefix) {
                return {};
            }
            if (text.empty())
                return invalid(
                    "must be set when the detect-local mode is "
                    "InterfaceNamePrefix");
            if (auto status = check_interface_name(text); !status) return status;
            backend.local_interface = text;
            return {};
        },
    });
    table.push_back({
        .names = {"--masquerade-all"},
        .kind = ValueKind::kBool,
        .default_text = "false",
        .help = "masquerade all traffic to Services",
        .fields = {{.path = "iptables.masqueradeAll", .sections = kIptablesOrIpvs},
                   {.path = "nftables.masqueradeAll", .sections = kNftablesSection}},
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto value = parse_bool(text);
            if (!value) return value.error();
            context.options.backend.masquerade_all = *value;
            return {};
        },
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
                "\"primary\"; empty: all",
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
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto value = parse_bool(text);
            if (!value) return value.error();
            context.options.backend.ipvs_strict_arp = *value;
            return {};
        },
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
    // --- when to sync: kube-proxy reads the pair of the mode in use. The
    // top-level syncPeriod / minSyncPeriod (v1alpha2's spelling) are read
    // too; a field listed earlier wins over a later one.
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
        .help = "period of full resyncs, nftables and iptables mode (Go duration)",
        .fields =
            {{.path = "iptables.syncPeriod", .sections = kIptablesSection, .zero_is_absent = true},
             {.path = "nftables.syncPeriod", .sections = kNftablesSection, .zero_is_absent = true},
             {.path = "syncPeriod",
              .sections = kIptablesSection | kNftablesSection,
              .zero_is_absent = true}},
        .apply = store_sync_period,
        .applies_in = outside_ipvs,
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
        .help = "period of full resyncs, ipvs mode (Go duration)",
        .fields = {{.path = "ipvs.syncPeriod", .sections = kIpvsSection, .zero_is_absent = true},
                   {.path = "syncPeriod", .sections = kIpvsSection, .zero_is_absent = true}},
        .apply = store_sync_period,
        .applies_in = in_ipvs,
    });
    // --- the HTTP servers. The deprecated port flags come first: the bind
    // addresses read them.
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
            if (!address) return invalid(quote_for_message(text) + " is not an IP address");
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
    // --- node settings, applied at start (proxy/node_setup)
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
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto value = parse_bool(text);
            if (!value) return value.error();
            context.options.conntrack.tcp_be_liberal = *value;
            return {};
        },
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
    // --- DNS (CoreDNS's names where they exist)
    table.push_back({
        .names = {"--cluster-domain"},
        .role = OptionRole::kCommandLine,
        .default_text = "cluster.local",
        .help = "the cluster's DNS domain",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto domain = parse_domain(text);
            if (!domain) return domain.error();
            context.options.dns.cluster_domain = *domain;
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-listen"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "ADDR[:PORT] list (comma-separated) the DNS server binds; empty: DNS off",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.dns.listen.clear();
            for (const auto& item : split_list(text)) {
                auto address = parse_host_port(item, 53);
                if (!address) return address.error();
                context.options.dns.listen.push_back(*address);
            }
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-local-address"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "IP list (comma-separated, at most 8) put on switchboard's own interface and "
                "answered on port 53 without conntrack or Service DNAT",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            std::vector<IpAddress> addresses;
            for (const auto& item : split_list(text)) {
                auto address = IpAddress::parse(item);
                if (!address) return invalid(quote_for_message(item) + " is not an IP address");
                addresses.push_back(*address);
            }
            if (auto status = rules::dns_local::validate_addresses(addresses); !status) {
                return status;
            }
            context.options.dns_local_addresses = std::move(addresses);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-ttl"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "30",
        .help = "TTL of cluster answers, 0-3600 seconds",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto ttl = parse_integer(text, 0, 3600);
            if (!ttl) return ttl.error();
            context.options.dns.ttl = static_cast<uint32_t>(*ttl);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-pods"},
        .role = OptionRole::kCommandLine,
        .default_text = "insecure",
        .help = "pod records: disabled, insecure or verified",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            if (auto status = check_one_of(text, {"disabled", "insecure", "verified"}); !status) {
                return status;
            }
            auto pods = dns::parse_pod_records(text);
            if (!pods) return pods.error();
            context.options.dns.pods = *pods;
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-upstream"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "ADDR[:PORT] list for other names; empty: /etc/resolv.conf's nameservers",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.dns.upstreams.clear();
            if (text.empty()) return {};
            auto upstreams = dns::parse_upstreams(text);
            if (!upstreams) return upstreams.error();
            context.options.dns.upstreams = std::move(*upstreams);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-autopath"},
        .kind = ValueKind::kBool,
        .role = OptionRole::kCommandLine,
        .default_text = "false",
        .help = "answer a Pod's first search expansion with the first name of its search path "
                "that exists (CoreDNS's autopath @kubernetes)",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto value = parse_bool(text);
            if (!value) return value.error();
            context.options.dns.autopath = *value;
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-corefile"},
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "CoreDNS Corefile read at start; it wins over the --dns-* flags (docs/corefile.md)",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            context.options.dns_corefile = std::string(text);
            return {};
        },
    });
    // --- DNS response-rate limiting (Knot DNS's mod-rrl: docs/dns.md)
    table.push_back({
        .names = {"--dns-rrl"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "0",
        .help = "UDP replies a second per client /24 or /56, reply class and name; 0: off",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto rate = parse_integer(text, 0, 1000000);
            if (!rate) return rate.error();
            context.options.dns.rrl.rate = static_cast<uint32_t>(*rate);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-rrl-slip"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "1",
        .help = "every Nth rate-limited reply is sent truncated (TC), the others dropped; "
                "0: all dropped",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto slip = parse_integer(text, 0, 100);
            if (!slip) return slip.error();
            context.options.dns.rrl.slip = static_cast<uint32_t>(*slip);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-rrl-whitelist"},
        .kind = ValueKind::kList,
        .role = OptionRole::kCommandLine,
        .default_text = "",
        .help = "CIDRs (comma-separated) whose clients are never rate-limited",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto prefixes = parse_prefix_list(text);
            if (!prefixes) return prefixes.error();
            context.options.dns.rrl.whitelist = std::move(*prefixes);
            return {};
        },
    });
    table.push_back({
        .names = {"--dns-rrl-table-size"},
        .kind = ValueKind::kInt,
        .role = OptionRole::kCommandLine,
        .default_text = "393241",
        .help = "buckets of the rate limiter's table (32 bytes each), allocated at start",
        .apply = [](std::string_view text, ApplyContext& context) -> Status {
            auto size = parse_integer(text, 1, 1 << 26);
            if (!size) return size.error();
            context.options.dns.rrl.table_size = static_cast<size_t>(*size);
            return {};
        },
    });
    // --- one-shot commands
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

    // --- kube-proxy's options that mean nothing here
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
    table.push_back(ignored({"--iptables-localhost-nodeports"}, ValueKind::kBool,
                            "switchboard's NodePorts never answer on loopback addresses",
                            {{.path = "iptables.localhostNodePorts"}}, "true"));
    table.push_back(ignored({}, ValueKind::kBool,
                            "switchboard masquerades to the outgoing interface's address",
                            {{.path = "iptables.snatNodeInternalIP"}}));
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

    // --- kube-proxy's options switchboard cannot honour
    table.push_back({
        .names = {"--write-config-to"},
        .role = OptionRole::kRefused,
        .help = "switchboard does not write kube-proxy configuration files",
    });
    return table;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
    static const std::vector<OptionSpec> table = build_table();
    return table;
}

const OptionSpec* find_flag(std::string_view name) {
    std::string normalized(name);
    std::replace(normalized.begin(), normalized.end(), '_', '-');
    for (const auto& spec : option_table()) {
        for (auto candidate : spec.names) {
            if (candidate == normalized) return &spec;
        }
    }
    return nullptr;
}

std::optional<bool> parse_bool_text(std::string_view text) {
    for (std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
        if (text == yes) return true;
    }
    for (std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
        if (text == no) return false;
    }
    return std::nullopt;
}

bool is_zero_text(ValueKind kind, std::string_view text) {
    if (text.empty()) return true;
    switch (kind) {
        case ValueKind::kBool:
            return parse_bool_text(text) == false;
        case ValueKind::kInt:
            return text == "0";
        case ValueKind::kDuration: {
            auto duration = parse_go_duration(text);
            return duration && duration->count() == 0;
        }
        case ValueKind::kString:
            // Numbers in string-typed fields (clientConnection.qps) too.
            return text == "0" || text == "0.0";
        case ValueKind::kList:
        case ValueKind::kMap:
            return false;
    }
    return false;
}

}  // namespace sb::proxy
