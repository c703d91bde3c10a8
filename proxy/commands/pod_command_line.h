// The command line of the one-shot commands that show what a Pod sees
// (`pod-dns`, `pod-env`, `lookup`; README "What does my Pod see"). Each
// declares its own options (proxy/options/command_options.h), apart from
// the daemon's kube-proxy option table: they take none of the daemon's
// flags but the source's, and are split by the same splitter.
//
// Thread safety: called from main's thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "proxy/app/source_state.h"
#include "proxy/options/command_options.h"

namespace sb::proxy {

// Parses `args` (after the command word) into the options of `line`.
// nullopt: go on. Otherwise the exit code to return: 0 after printing the
// help to stdout, 2 after one line on stderr, "switchboard COMMAND: ...",
// naming the bad flag or argument.
std::optional<int> parse_pod_command_line(const CommandLine& line,
                                          const std::vector<std::string>& args);

// --source, --kubeconfig, --master and --hostname-override, read into the
// returned settings by finish_source_flags().
struct SourceFlags {
    std::string source = "kubernetes";
    std::string kubeconfig;
    std::string master;
    std::string hostname_override;
};
void add_source_flags(std::vector<CommandOption>& options, SourceFlags& flags);

// The settings the flags name (the node from --hostname-override, else
// $NODE_NAME, else the host name); kInvalidArgument naming the flag.
Result<SourceSettings> finish_source_flags(const SourceFlags& flags, bool watch_pods);

// One line on stderr, "switchboard COMMAND: MESSAGE", and the exit code
// for the error (exit_code_for: 2 for kInvalidArgument, else 1).
int report_command_error(const std::string& command, const Error& error);

// Runs the command `args.front()` names when it is one of these commands;
// nullopt when it is not (the daemon's flags follow).
std::optional<int> run_pod_command(const std::vector<std::string>& args);

}  // namespace sb::proxy
