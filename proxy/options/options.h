// Options: everything the `switchboard` binary was asked to do, from its
// command line and the KubeProxyConfiguration it may name (parsed by
// proxy/options/flags.h through the one table of rows,
// proxy/options/option_table.h). A plain value: the daemon and the one-shot
// runs read it, nothing writes it after parse_flags.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "dns/corefile/config.h"
#include "dns/dns_options.h"
#include "rules/backend.h"

namespace sb::proxy {

enum class ProxyMode { kNftables, kIptables, kIpvs };
const char* to_string(ProxyMode mode);  // "nftables", "iptables", "ipvs"

enum class Command {
    kRun,      // the daemon (or --dry-run / --cleanup / --init-only / --cleanup-kube-proxy)
    kPlan,     // `switchboard plan ...`: print the Plan as JSON and exit
    kHelp,     // --help: print usage() and exit 0
    kVersion,  // --version: print version_text() and exit 0
};

inline constexpr uint16_t kDefaultMetricsPort = 10249;
inline constexpr uint16_t kDefaultHealthzPort = 10256;

// kube-proxy's conntrack settings (--conntrack-*, KubeProxyConfiguration
// conntrack.*), applied at start by proxy/node_setup. 0 leaves the kernel's
// value alone, as in kube-proxy.
struct ConntrackOptions {
    // nf_conntrack_max = max(max_per_core * CPUs, min), capped at 1048576
    // (kube-proxy's cap); only ever raised. max_per_core 0: leave it.
    int32_t max_per_core = 32 * 1024;
    int32_t min = 128 * 1024;
    std::chrono::nanoseconds tcp_established_timeout = std::chrono::hours(24);
    std::chrono::nanoseconds tcp_close_wait_timeout = std::chrono::hours(1);
    bool tcp_be_liberal = false;  // true: nf_conntrack_tcp_be_liberal = 1
    std::chrono::nanoseconds udp_timeout{0};
    std::chrono::nanoseconds udp_stream_timeout{0};
};

struct Options {
    Command command = Command::kRun;
    ProxyMode proxy_mode = ProxyMode::kNftables;
    // --config: the KubeProxyConfiguration file read ("" when none).
    std::string config_file;
    // --source: empty source_file means the Kubernetes API server.
    std::string source_file;
    // --state-dir: where the node's state outlives the daemon (one folder per
    // network namespace below it: proxy/app/node_state.h); empty: none.
    std::string state_dir = "/run/switchboard";
    std::string kubeconfig;  // --kubeconfig, clientConnection.kubeconfig
    std::string master;      // --master
    // --hostname-override (else hostnameOverride of --config), else
    // $NODE_NAME, else the host name; trimmed and lowercased as kube-proxy
    // does. Never empty after a successful parse.
    std::string node_name;
    // --cluster-cidr, --masquerade-all, --nodeport-addresses,
    // --iptables-masquerade-bit, --ipvs-scheduler, --detect-local-mode with
    // --pod-bridge-interface / --pod-interface-name-prefix.
    rules::BackendOptions backend;
    // --nodeport-addresses=primary: the node's primary IPs (from its Node
    // object), resolved when the first sync runs.
    bool nodeport_primary = false;
    // The sync periods of the mode in use: --iptables-(min-)sync-period
    // (aliases --(min-)sync-period) in nftables and iptables mode,
    // --ipvs-(min-)sync-period in ipvs mode, as kube-proxy reads them.
    std::chrono::nanoseconds min_sync_period = std::chrono::seconds(1);
    std::chrono::nanoseconds sync_period = std::chrono::seconds(30);
    // --full-sync-period (sync_runner.h): kube-proxy's FullSyncPeriod.
    std::chrono::nanoseconds full_sync_period = std::chrono::hours(1);
    // nullopt: that server is disabled (the flag was set to "", or its
    // deprecated --*-port flag to 0).
    std::optional<HostPort> metrics_bind;
    std::optional<HostPort> healthz_bind;
    // --bind-address: kube-proxy's hint of this node's primary IP (and so its
    // primary family); the unspecified address (the default 0.0.0.0, or ::)
    // gives no hint. Nothing binds to it.
    IpAddress bind_address;
    // --bind-address-hard-fail: a healthz or metrics port that cannot be
    // bound is fatal instead of being retried.
    bool bind_address_hard_fail = false;
    ConntrackOptions conntrack;
    int oom_score_adj = -999;  // --oom-score-adj, kube-proxy's default
    // --dns-listen (empty: DNS off), --cluster-domain, --dns-ttl, --dns-pods,
    // --dns-upstream.
    dns::DnsOptions dns;
    // --dns-local-address: node-local DNS addresses (validated by
    // rules::dns_local::validate_addresses), served on port 53 besides
    // --dns-listen; docs/dns.md, "Node-local addresses".
    std::vector<IpAddress> dns_local_addresses;
    // --dns-corefile ("" when none): read by parse_flags, which sets `dns`
    // from it (docs/corefile.md).
    std::string dns_corefile;
    // Its typed configuration (no servers without --dns-corefile): the
    // daemon opens CoreDNS's prometheus, health and ready listeners from it.
    dns::CorefileConfig dns_corefile_config;
    // For the Corefile's `reload`: the text `dns` was set from, and `dns` as
    // the flags alone set it, which a reloaded Corefile is applied over.
    std::string dns_corefile_text;
    dns::DnsOptions dns_flags;
    bool dry_run = false;
    bool cleanup = false;
    // --cleanup-kube-proxy: remove kube-proxy's kernel objects and exit.
    bool cleanup_kube_proxy = false;
    // --init-only: apply the node settings (conntrack sysctls) and exit.
    bool init_only = false;
    int verbosity = 0;  // -v / --v (klog style), logging.verbosity; 2 and above log debug
    // One line each, for main() to log at warn: kube-proxy flags and config
    // fields accepted but without meaning here, flags --config overrides.
    std::vector<std::string> warnings;
};

}  // namespace sb::proxy
