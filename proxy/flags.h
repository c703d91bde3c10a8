// Command-line flags of the `switchboard` binary, parsed into a plain struct.
//
// Flag names follow kube-proxy (and CoreDNS for the DNS ones); each takes
// `--flag=value` and `--flag value`. parse_flags() is a pure function of the
// arguments and the environment it is handed, so every flag and every
// rejection is unit-tested without a process. A rejection is one line that
// names the flag, e.g. `--proxy-mode: "foo" is not one of nftables, iptables,
// ipvs`; main() prefixes "switchboard: " and exits 2. See docs/daemon.md.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "dns/dns_service.h"
#include "rules/backend.h"

namespace sb::proxy {

enum class ProxyMode { kNftables, kIptables, kIpvs };
const char* to_string(ProxyMode mode);  // "nftables", "iptables", "ipvs"

enum class Command {
    kRun,   // the daemon (or --dry-run / --cleanup)
    kPlan,  // `switchboard plan ...`: print the Plan as JSON and exit
    kHelp,  // --help: print usage() and exit 0
};

inline constexpr uint16_t kDefaultMetricsPort = 10249;
inline constexpr uint16_t kDefaultHealthzPort = 10256;

struct Options {
    Command command = Command::kRun;
    ProxyMode proxy_mode = ProxyMode::kNftables;
    // --source: empty source_file means the Kubernetes API server.
    std::string source_file;
    std::string kubeconfig;  // --kubeconfig
    std::string master;      // --master
    // --hostname-override, else $NODE_NAME, else the host name; trimmed and
    // lowercased as kube-proxy does. Never empty after a successful parse.
    std::string node_name;
    // --cluster-cidr, --masquerade-all, --nodeport-addresses, --masquerade-bit,
    // --ipvs-scheduler.
    rules::BackendOptions backend;
    // --nodeport-addresses=primary: the node's primary IPs (from its Node
    // object), resolved when the first sync runs.
    bool nodeport_primary = false;
    std::chrono::nanoseconds min_sync_period = std::chrono::seconds(1);
    std::chrono::nanoseconds sync_period = std::chrono::seconds(30);
    // nullopt: that server is disabled (the flag was set to "").
    std::optional<HostPort> metrics_bind;
    std::optional<HostPort> healthz_bind;
    // --bind-address-hard-fail: a metrics or healthz port that cannot be
    // bound exits 1; otherwise it is logged, counted and retried every 5 s
    // while the proxy keeps programming rules (kube-proxy's behaviour).
    bool bind_address_hard_fail = false;
    // --dns-listen (empty: DNS off), --cluster-domain, --dns-ttl, --dns-pods,
    // --dns-upstream.
    dns::DnsOptions dns;
    bool dry_run = false;
    bool cleanup = false;
    // --cleanup-kube-proxy: remove kube-proxy's kernel leftovers, then exit.
    bool cleanup_kube_proxy = false;
    int verbosity = 0;  // -v / --v (klog style); 2 and above log debug
};

// What parse_flags reads from the process environment, handed in so that
// parsing stays pure.
struct Environment {
    std::string node_name_env;  // $NODE_NAME ("" when unset)
    std::string hostname;       // gethostname()
};
Environment current_environment();

// `args` excludes the program name. The first argument may be the command
// word `plan`. Errors are kInvalidArgument with a one-line message naming
// the flag.
Result<Options> parse_flags(const std::vector<std::string>& args, const Environment& environment);

// The --help text.
std::string usage();

// A Go duration (time.ParseDuration): "300ms", "1.5h", "1m30s", "0".
// Units ns, us (µs), ms, s, m, h; a sign is allowed; every number but a
// bare "0" needs a unit.
Result<std::chrono::nanoseconds> parse_go_duration(std::string_view text);

// The canonical Go spelling of a duration ("1m30s", "500ms"), for messages.
std::string format_go_duration(std::chrono::nanoseconds duration);

}  // namespace sb::proxy
