// The options of the `switchboard` binary: its command line and kube-proxy's
// --config file, combined into one plain struct.
//
// Every option is declared once, in the table of proxy/options/option_table.h
// (names, default, help, config-file field, validation); this file turns a
// command line, and the KubeProxyConfiguration it may name, into Options
// through that table.
// Flag names follow kube-proxy (and CoreDNS for the DNS ones); each takes
// `--flag=value` and `--flag value`. parse_flags() is a pure function of the
// arguments and the environment it is handed (the file reader included), so
// every flag and every rejection is unit-tested without a process. A
// rejection is one line that names the flag or the file and line, e.g.
// `--proxy-mode: "foo" is not one of nftables, iptables, ipvs` or
// `config.conf:12: iptables.syncPeriod: "3x" is not a duration (...)`;
// main() prefixes "switchboard: " and exits 2. See docs/daemon.md and
// docs/kube-proxy-config.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "dns/corefile/grammar.h"
#include "proxy/options/options.h"

namespace sb::proxy {

// What parse_flags reads from the process, handed in so that parsing stays
// pure.
struct Environment {
    std::string node_name_env;  // $NODE_NAME ("" when unset)
    std::string hostname;       // gethostname()
    // Reads the --config file; errors name the path. Unset: --config fails.
    std::function<Result<std::string>(const std::string& path)> read_file = nullptr;
    // The Corefile's {$NAME} placeholders. Unset: every one expands to "".
    dns::EnvironmentLookup lookup_env = nullptr;
};
Environment current_environment();

// `args` excludes the program name. The first argument may be the command
// word `plan`. Errors are kInvalidArgument with a one-line message naming
// the flag, or the --config file and line.
Result<Options> parse_flags(const std::vector<std::string>& args, const Environment& environment);

// The --help text: every option of the table, and the kube-proxy flags
// accepted without effect.
std::string usage();

// The --version text: "switchboard VERSION" and what it is compatible with.
std::string version_text();

}  // namespace sb::proxy
