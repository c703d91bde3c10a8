#include "proxy/commands/pod_command_line.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>

#include "base/quote.h"
#include "proxy/app/daemon.h"
#include "proxy/commands/pod_commands.h"

namespace sb::proxy {

std::optional<int> parse_pod_command_line(const CommandLine& line,
                                          const std::vector<std::string>& args) {
    auto request = parse_command_line(line, args);
    if (!request) return report_command_error(std::string(line.command), request.error());
    if (*request == CommandRequest::kHelp) {
        std::cout << command_help(line) << std::flush;
        return kExitOk;
    }
    return std::nullopt;
}

void add_source_flags(std::vector<CommandOption>& options, SourceFlags& flags) {
    options.push_back(
        text_option({"--source"},
                    "kubernetes (the API server) or file:PATH (a JSON List file or folder)",
                    flags.source)
            .with_default("kubernetes"));
    options.push_back(
        text_option({"--kubeconfig"}, "kubeconfig for the API server", flags.kubeconfig));
    options.push_back(
        text_option({"--master"}, "the API server's address, over the kubeconfig's", flags.master));
    options.push_back(text_option({"--hostname-override"},
                                  "this node's name (else $NODE_NAME, else the host name)",
                                  flags.hostname_override));
}

Result<SourceSettings> finish_source_flags(const SourceFlags& flags, bool watch_pods) {
    SourceSettings settings;
    if (flags.source.rfind("file:", 0) == 0) {
        settings.source_file = flags.source.substr(5);
        if (settings.source_file.empty()) {
            return make_error(ErrorCode::kInvalidArgument, "--source: file: needs a PATH");
        }
    } else if (flags.source != "kubernetes") {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("--source: {} is not one of kubernetes, file:PATH",
                                      quote_for_message(flags.source)));
    }
    settings.kubeconfig = flags.kubeconfig;
    settings.master = flags.master;
    settings.node_name = flags.hostname_override;
    if (settings.node_name.empty()) {
        if (const char* env = std::getenv("NODE_NAME")) settings.node_name = env;
    }
    if (settings.node_name.empty()) {
        char host[256] = {};
        if (gethostname(host, sizeof host - 1) == 0) settings.node_name = host;
    }
    std::transform(settings.node_name.begin(), settings.node_name.end(), settings.node_name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    settings.watch_pods = watch_pods;
    return settings;
}

int report_command_error(const std::string& command, const Error& error) {
    // Messages quote paths and names from the command line and the source.
    fmt::print(stderr, "switchboard {}: {}\n", command, one_line(error.describe()));
    return exit_code_for(error);
}

std::optional<int> run_pod_command(const std::vector<std::string>& args) {
    if (args.empty()) return std::nullopt;
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args.front() == "pod-dns") return run_pod_dns(rest);
    if (args.front() == "pod-env") return run_pod_env(rest);
    if (args.front() == "lookup") return run_lookup(rest);
    return std::nullopt;
}

}  // namespace sb::proxy
