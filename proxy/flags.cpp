#include "proxy/flags.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "rules/validate.h"

namespace sb::proxy {

const char* to_string(ProxyMode mode) {
    switch (mode) {
        case ProxyMode::kNftables:
            return "nftables";
        case ProxyMode::kIptables:
            return "iptables";
        case ProxyMode::kIpvs:
            return "ipvs";
    }
    return "?";
}

Environment current_environment() {
    Environment environment;
    if (const char* node_name = std::getenv("NODE_NAME")) environment.node_name_env = node_name;
    char hostname[256] = {};
    if (gethostname(hostname, sizeof(hostname) - 1) == 0) environment.hostname = hostname;
    return environment;
}

namespace {

using std::chrono::nanoseconds;

Error flag_error(std::string_view flag, std::string message) {
    return make_error(ErrorCode::kInvalidArgument, std::string(flag) + ": " + std::move(message));
}

std::string in_quotes(std::string_view text) {
    return "\"" + std::string(text.substr(0, 200)) + "\"";
}

// The raw text of every flag, as CLI11 collects it; validated afterwards so
// that each rejection can name its flag in our words.
struct RawFlags {
    std::string proxy_mode = "nftables";
    std::string source = "kubernetes";
    std::string kubeconfig;
    std::string master;
    std::string hostname_override;
    std::string cluster_cidr;
    bool masquerade_all = false;
    std::string detect_local_mode = "ClusterCIDR";
    std::string pod_bridge_interface;
    std::string pod_interface_name_prefix;
    std::string nodeport_addresses;
    std::string ipvs_scheduler = "rr";
    std::string min_sync_period = "1s";
    std::string sync_period = "30s";
    std::string metrics_bind_address = "127.0.0.1:10249";
    std::string healthz_bind_address = "0.0.0.0:10256";
    std::string cluster_domain = "cluster.local";
    std::string dns_listen;
    std::string dns_ttl = "30";
    std::string dns_pods = "insecure";
    std::string dns_upstream;
    bool dry_run = false;
    bool cleanup = false;
    std::string masquerade_bit = "14";
    std::string verbosity = "0";
};

void define_flags(CLI::App& app, RawFlags& raw) {
    // pflag (kube-proxy) keeps the last of repeated flags; so do we.
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app.add_option("--proxy-mode", raw.proxy_mode, "nftables, iptables or ipvs")
        ->capture_default_str();
    app.add_option("--source", raw.source,
                   "kubernetes (the API server) or file:PATH (a JSON file or folder of them)")
        ->capture_default_str();
    app.add_option("--kubeconfig", raw.kubeconfig, "kubeconfig file; empty: in-cluster config");
    app.add_option("--master", raw.master, "API server address; overrides the kubeconfig's");
    app.add_option("--hostname-override", raw.hostname_override,
                   "this node's name; else $NODE_NAME, else the host name");
    app.add_option("--cluster-cidr", raw.cluster_cidr,
                   "Pod CIDRs (comma-separated, one per family): traffic to Services from "
                   "outside them is masqueraded");
    app.add_flag("--masquerade-all", raw.masquerade_all, "masquerade all traffic to Services");
    app.add_option("--detect-local-mode", raw.detect_local_mode,
                   "how pod traffic is told apart: ClusterCIDR, NodeCIDR, BridgeInterface or "
                   "InterfaceNamePrefix")
        ->capture_default_str();
    app.add_option("--pod-bridge-interface", raw.pod_bridge_interface,
                   "BridgeInterface: the pods' bridge");
    app.add_option("--pod-interface-name-prefix", raw.pod_interface_name_prefix,
                   "InterfaceNamePrefix: the prefix of the pods' interface names");
    app.add_option("--nodeport-addresses", raw.nodeport_addresses,
                   "CIDRs (comma-separated) of the node addresses NodePorts answer on, or "
                   "\"primary\"; empty: all");
    app.add_option("--ipvs-scheduler", raw.ipvs_scheduler, "rr, lc, dh, sh, sed or nq")
        ->capture_default_str();
    app.add_option("--min-sync-period", raw.min_sync_period,
                   "least time between two syncs (Go duration)")
        ->capture_default_str();
    app.add_option("--sync-period", raw.sync_period, "period of full resyncs (Go duration)")
        ->capture_default_str();
    app.add_option("--metrics-bind-address", raw.metrics_bind_address,
                   "ADDR:PORT of /metrics, /debug/services, /proxyMode, /readyz; empty: off")
        ->capture_default_str();
    app.add_option("--healthz-bind-address", raw.healthz_bind_address,
                   "ADDR:PORT of /healthz and /livez; empty: off")
        ->capture_default_str();
    app.add_option("--cluster-domain", raw.cluster_domain, "the cluster's DNS domain")
        ->capture_default_str();
    app.add_option("--dns-listen", raw.dns_listen,
                   "ADDR[:PORT] list (comma-separated) the DNS server binds; empty: DNS off");
    app.add_option("--dns-ttl", raw.dns_ttl, "TTL of cluster answers, 0-3600 seconds")
        ->capture_default_str();
    app.add_option("--dns-pods", raw.dns_pods, "pod records: disabled, insecure or verified")
        ->capture_default_str();
    app.add_option("--dns-upstream", raw.dns_upstream,
                   "ADDR[:PORT] list for other names; empty: /etc/resolv.conf's nameservers");
    app.add_flag("--dry-run", raw.dry_run, "print the rules for the current state and exit");
    app.add_flag("--cleanup", raw.cleanup, "remove every kernel object switchboard made and exit");
    app.add_option("--masquerade-bit", raw.masquerade_bit,
                   "bit of the fwmark that marks packets to masquerade, 0-31")
        ->capture_default_str();
    app.add_option("-v,--v", raw.verbosity, "log verbosity (2 and above: debug)")
        ->capture_default_str();
}

Result<int64_t> parse_integer(std::string_view flag, std::string_view text, int64_t min,
                              int64_t max) {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
        return flag_error(flag, in_quotes(text) + " is not an integer");
    }
    if (value < min || value > max) {
        return flag_error(flag, std::to_string(value) + " is out of range " + std::to_string(min) +
                                    "-" + std::to_string(max));
    }
    return value;
}

// Splits on commas, trimming spaces; empty items are dropped.
std::vector<std::string> split_list(std::string_view text) {
    std::vector<std::string> items;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find(',', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view item = text.substr(start, end - start);
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front()))) {
            item.remove_prefix(1);
        }
        while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) {
            item.remove_suffix(1);
        }
        if (!item.empty()) items.emplace_back(item);
        start = end + 1;
    }
    return items;
}

std::string trim_lower(std::string_view text) {
    std::string result;
    for (char c : text) {
        result.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    result.erase(result.begin(), std::find_if(result.begin(), result.end(), not_space));
    result.erase(std::find_if(result.rbegin(), result.rend(), not_space).base(), result.end());
    return result;
}

// "one of a, b, c" membership with the contract's wording.
Status check_one_of(std::string_view flag, std::string_view value,
                    std::initializer_list<std::string_view> allowed) {
    for (auto candidate : allowed) {
        if (value == candidate) return {};
    }
    std::string list;
    for (auto candidate : allowed) {
        if (!list.empty()) list += ", ";
        list += candidate;
    }
    return flag_error(flag, in_quotes(value) + " is not one of " + list);
}

Result<std::vector<Prefix>> parse_prefix_list(std::string_view flag, std::string_view text) {
    std::vector<Prefix> prefixes;
    for (const auto& item : split_list(text)) {
        // kube-proxy parses these with ParseCIDRSloppy: host bits are allowed.
        auto prefix = Prefix::parse(item, /*allow_host_bits=*/true);
        if (!prefix) return flag_error(flag, in_quotes(item) + " is not a CIDR");
        prefixes.push_back(*prefix);
    }
    return prefixes;
}

Result<std::optional<HostPort>> parse_bind_address(std::string_view flag, std::string_view text,
                                                   uint16_t default_port) {
    if (text.empty()) return std::optional<HostPort>();
    auto address = parse_host_port(text, default_port);
    if (!address) return flag_error(flag, address.error().message);
    return std::optional<HostPort>(*address);
}

// RFC 1123 labels separated by dots; a trailing dot is dropped.
Result<std::string> parse_domain(std::string_view flag, std::string_view text) {
    std::string domain = trim_lower(text);
    if (!domain.empty() && domain.back() == '.') domain.pop_back();
    auto bad = [&](const std::string& why) {
        return flag_error(flag, in_quotes(text) + ": " + why);
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

Result<nanoseconds> parse_period(std::string_view flag, std::string_view text) {
    auto duration = parse_go_duration(text);
    if (!duration) return flag_error(flag, duration.error().message);
    if (duration->count() < 0) return flag_error(flag, in_quotes(text) + " is negative");
    return *duration;
}

// Turns the raw strings into Options, rejecting the first bad flag.
Result<Options> validate(const RawFlags& raw, const Environment& environment) {
    Options options;

    if (auto status =
            check_one_of("--proxy-mode", raw.proxy_mode, {"nftables", "iptables", "ipvs"});
        !status) {
        return status.error();
    }
    options.proxy_mode = raw.proxy_mode == "iptables" ? ProxyMode::kIptables
                         : raw.proxy_mode == "ipvs"   ? ProxyMode::kIpvs
                                                      : ProxyMode::kNftables;

    if (raw.source.rfind("file:", 0) == 0) {
        options.source_file = raw.source.substr(5);
        if (options.source_file.empty()) return flag_error("--source", "file: needs a PATH");
    } else if (raw.source != "kubernetes") {
        return flag_error("--source",
                          in_quotes(raw.source) + " is not one of kubernetes, file:PATH");
    }
    options.kubeconfig = raw.kubeconfig;
    options.master = raw.master;

    std::string node_name = trim_lower(raw.hostname_override);
    if (node_name.empty()) node_name = trim_lower(environment.node_name_env);
    if (node_name.empty()) node_name = trim_lower(environment.hostname);
    if (node_name.empty()) {
        return flag_error("--hostname-override",
                          "empty, and neither NODE_NAME nor the host name "
                          "is set");
    }
    options.node_name = node_name;

    auto cidrs = parse_prefix_list("--cluster-cidr", raw.cluster_cidr);
    if (!cidrs) return cidrs.error();
    size_t v4 = 0;
    for (const auto& prefix : *cidrs) v4 += prefix.family() == IpFamily::kV4 ? 1 : 0;
    if (v4 > 1 || cidrs->size() - v4 > 1) {
        return flag_error("--cluster-cidr",
                          in_quotes(raw.cluster_cidr) + " has more than one CIDR of a family");
    }
    options.backend.cluster_cidrs = std::move(*cidrs);
    options.backend.masquerade_all = raw.masquerade_all;

    // kube-proxy: an empty mode is ClusterCIDR.
    using rules::LocalDetectMode;
    const std::string mode = raw.detect_local_mode.empty() ? "ClusterCIDR" : raw.detect_local_mode;
    if (auto status =
            check_one_of("--detect-local-mode", mode,
                         {"ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix"});
        !status) {
        return status.error();
    }
    auto& backend = options.backend;
    if (mode == "NodeCIDR") backend.local_detect_mode = LocalDetectMode::kNodeCidr;
    const char* interface_flag = nullptr;
    if (mode == "BridgeInterface") {
        backend.local_detect_mode = LocalDetectMode::kBridgeInterface;
        backend.local_interface = raw.pod_bridge_interface;
        interface_flag = "--pod-bridge-interface";
    } else if (mode == "InterfaceNamePrefix") {
        backend.local_detect_mode = LocalDetectMode::kInterfaceNamePrefix;
        backend.local_interface = raw.pod_interface_name_prefix;
        interface_flag = "--pod-interface-name-prefix";
    }
    if (interface_flag) {
        if (auto status = rules::validate_interface_name(backend.local_interface); !status) {
            return flag_error(interface_flag, status.error().message +
                                                  " (needed by --detect-local-mode=" + mode + ")");
        }
    }

    if (trim_lower(raw.nodeport_addresses) == "primary") {
        options.nodeport_primary = true;
    } else {
        auto nodeports = parse_prefix_list("--nodeport-addresses", raw.nodeport_addresses);
        if (!nodeports) return nodeports.error();
        options.backend.nodeport_addresses = std::move(*nodeports);
    }

    if (auto status = check_one_of("--ipvs-scheduler", raw.ipvs_scheduler,
                                   {"rr", "lc", "dh", "sh", "sed", "nq"});
        !status) {
        return status.error();
    }
    options.backend.ipvs_scheduler = raw.ipvs_scheduler;

    auto bit = parse_integer("--masquerade-bit", raw.masquerade_bit, 0, 31);
    if (!bit) return bit.error();
    options.backend.masquerade_mark = uint32_t{1} << *bit;

    auto min_sync = parse_period("--min-sync-period", raw.min_sync_period);
    if (!min_sync) return min_sync.error();
    auto sync = parse_period("--sync-period", raw.sync_period);
    if (!sync) return sync.error();
    if (sync->count() == 0) return flag_error("--sync-period", "must be greater than 0");
    if (*sync < *min_sync) {
        return flag_error("--sync-period", format_go_duration(*sync) +
                                               " is shorter than --min-sync-period " +
                                               format_go_duration(*min_sync));
    }
    options.min_sync_period = *min_sync;
    options.sync_period = *sync;

    auto metrics =
        parse_bind_address("--metrics-bind-address", raw.metrics_bind_address, kDefaultMetricsPort);
    if (!metrics) return metrics.error();
    options.metrics_bind = *metrics;
    auto healthz =
        parse_bind_address("--healthz-bind-address", raw.healthz_bind_address, kDefaultHealthzPort);
    if (!healthz) return healthz.error();
    options.healthz_bind = *healthz;

    auto domain = parse_domain("--cluster-domain", raw.cluster_domain);
    if (!domain) return domain.error();
    options.dns.cluster_domain = *domain;
    for (const auto& item : split_list(raw.dns_listen)) {
        auto address = parse_host_port(item, 53);
        if (!address) return flag_error("--dns-listen", address.error().message);
        options.dns.listen.push_back(*address);
    }
    auto ttl = parse_integer("--dns-ttl", raw.dns_ttl, 0, 3600);
    if (!ttl) return ttl.error();
    options.dns.ttl = static_cast<uint32_t>(*ttl);
    if (auto status =
            check_one_of("--dns-pods", raw.dns_pods, {"disabled", "insecure", "verified"});
        !status) {
        return status.error();
    }
    auto pods = dns::parse_pod_records(raw.dns_pods);
    if (!pods) return flag_error("--dns-pods", pods.error().message);
    options.dns.pods = *pods;
    if (!raw.dns_upstream.empty()) {
        auto upstreams = dns::parse_upstreams(raw.dns_upstream);
        if (!upstreams) return flag_error("--dns-upstream", upstreams.error().message);
        options.dns.upstreams = std::move(*upstreams);
    }

    options.dry_run = raw.dry_run;
    options.cleanup = raw.cleanup;
    if (options.dry_run && options.cleanup) {
        return flag_error("--cleanup", "cannot be combined with --dry-run");
    }
    auto verbosity = parse_integer("--v", raw.verbosity, 0, 10);
    if (!verbosity) return verbosity.error();
    options.verbosity = static_cast<int>(*verbosity);
    return options;
}

// CLI11 messages may span lines; the contract is one line.
std::string one_line(std::string text) {
    std::replace(text.begin(), text.end(), '\n', ' ');
    while (!text.empty() && text.back() == ' ') text.pop_back();
    return text;
}

}  // namespace

Result<Options> parse_flags(const std::vector<std::string>& args, const Environment& environment) {
    std::vector<std::string> rest = args;
    Command command = Command::kRun;
    if (!rest.empty() && rest.front() == "plan") {
        command = Command::kPlan;
        rest.erase(rest.begin());
    }
    // Spellings pflag accepts and CLI11 does not: "-v=2", and "--flag=" for
    // an empty value (which turns a bind address off).
    std::vector<std::string> normalized;
    for (const auto& arg : rest) {
        if (arg.rfind("-v=", 0) == 0) {
            normalized.push_back("--v");
            normalized.push_back(arg.substr(3));
        } else if (arg.size() > 3 && arg.rfind("--", 0) == 0 && arg.back() == '=' &&
                   arg.find('=') == arg.size() - 1) {
            normalized.push_back(arg.substr(0, arg.size() - 1));
            normalized.emplace_back();
        } else {
            normalized.push_back(arg);
        }
    }
    RawFlags raw;
    CLI::App app("switchboard", "switchboard");
    define_flags(app, raw);
    // CLI11 takes the arguments last-first.
    std::vector<std::string> reversed(normalized.rbegin(), normalized.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::CallForHelp&) {
        Options options;
        options.command = Command::kHelp;
        return options;
    } catch (const CLI::ParseError& error) {
        return make_error(ErrorCode::kInvalidArgument, one_line(error.what()));
    }
    auto options = validate(raw, environment);
    if (!options) return options;
    options->command = command;
    if (command == Command::kPlan && (options->dry_run || options->cleanup)) {
        return flag_error(options->dry_run ? "--dry-run" : "--cleanup",
                          "cannot be combined with the plan command");
    }
    return options;
}

std::string usage() {
    RawFlags raw;
    CLI::App app(
        "switchboard: a node-local kube-proxy and cluster DNS replacement.\n"
        "`switchboard plan [OPTIONS]` prints the Plan as JSON instead of running.\n"
        "Exit codes: 0 ok, 1 runtime failure, 2 bad flags or configuration.",
        "switchboard");
    define_flags(app, raw);
    return app.help();
}

Result<nanoseconds> parse_go_duration(std::string_view text) {
    auto bad = [&](const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument, in_quotes(text) + " is not a duration (" +
                                                           why + "; e.g. 500ms, 1s, 1m30s)");
    };
    constexpr uint64_t kMax = uint64_t{1} << 63;  // |min int64|
    std::string_view s = text;
    bool negative = false;
    if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
        negative = s.front() == '-';
        s.remove_prefix(1);
    }
    if (s == "0") return nanoseconds(0);
    if (s.empty()) return bad("empty");
    uint64_t total = 0;
    while (!s.empty()) {
        if (s.front() != '.' && !std::isdigit(static_cast<unsigned char>(s.front()))) {
            return bad("expected a number");
        }
        uint64_t whole = 0;
        size_t i = 0;
        for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
            if (whole > (kMax - 9) / 10) return bad("overflow");
            whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
        }
        bool has_whole = i > 0;
        s.remove_prefix(i);
        uint64_t fraction = 0;
        double scale = 1;
        bool has_fraction = false;
        if (!s.empty() && s.front() == '.') {
            s.remove_prefix(1);
            size_t j = 0;
            for (; j < s.size() && std::isdigit(static_cast<unsigned char>(s[j])); ++j) {
                // Digits beyond what fits are dropped, as Go does.
                if (fraction <= (kMax - 9) / 10) {
                    fraction = fraction * 10 + static_cast<uint64_t>(s[j] - '0');
                    scale *= 10;
                }
            }
            has_fraction = j > 0;
            s.remove_prefix(j);
        }
        if (!has_whole && !has_fraction) return bad("expected a number");
        size_t unit_length = 0;
        while (unit_length < s.size() && s[unit_length] != '.' &&
               !std::isdigit(static_cast<unsigned char>(s[unit_length]))) {
            ++unit_length;
        }
        if (unit_length == 0) return bad("missing unit");
        std::string_view unit_text = s.substr(0, unit_length);
        s.remove_prefix(unit_length);
        uint64_t unit = 0;
        if (unit_text == "ns") {
            unit = 1;
        } else if (unit_text == "us" || unit_text == "\u00b5s" || unit_text == "\u03bcs") {
            unit = 1'000;
        } else if (unit_text == "ms") {
            unit = 1'000'000;
        } else if (unit_text == "s") {
            unit = 1'000'000'000;
        } else if (unit_text == "m") {
            unit = 60'000'000'000;
        } else if (unit_text == "h") {
            unit = 3'600'000'000'000;
        } else {
            return bad("unknown unit " + in_quotes(unit_text));
        }
        if (whole > kMax / unit) return bad("overflow");
        uint64_t value = whole * unit;
        if (fraction > 0) {
            value += static_cast<uint64_t>(static_cast<double>(fraction) *
                                           (static_cast<double>(unit) / scale));
            if (value > kMax) return bad("overflow");
        }
        total += value;
        if (total > kMax) return bad("overflow");
    }
    if (negative) return nanoseconds(static_cast<int64_t>(0 - total));
    if (total > kMax - 1) return bad("overflow");
    return nanoseconds(static_cast<int64_t>(total));
}

std::string format_go_duration(nanoseconds duration) {
    int64_t ns = duration.count();
    if (ns == 0) return "0s";
    std::string sign = ns < 0 ? "-" : "";
    uint64_t value = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    // "1.5" from value/unit with trailing zeros dropped.
    auto decimal = [](uint64_t amount, uint64_t unit) {
        std::string text = std::to_string(amount / unit);
        uint64_t rest = amount % unit;
        if (rest == 0) return text;
        std::string digits = std::to_string(unit + rest).substr(1);
        while (!digits.empty() && digits.back() == '0') digits.pop_back();
        return text + "." + digits;
    };
    if (value < 1'000) return sign + std::to_string(value) + "ns";
    if (value < 1'000'000) return sign + decimal(value, 1'000) + "\u00b5s";
    if (value < 1'000'000'000) return sign + decimal(value, 1'000'000) + "ms";
    uint64_t hours = value / 3'600'000'000'000;
    uint64_t minutes = value / 60'000'000'000 % 60;
    std::string seconds = decimal(value % 60'000'000'000, 1'000'000'000) + "s";
    if (hours > 0)
        return sign + std::to_string(hours) + "h" + std::to_string(minutes) + "m" + seconds;
    if (minutes > 0) return sign + std::to_string(minutes) + "m" + seconds;
    return sign + seconds;
}

}  // namespace sb::proxy
