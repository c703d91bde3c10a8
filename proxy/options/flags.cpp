#include "proxy/options/flags.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "base/file_text.h"
#include "base/go_duration.h"
#include "base/quote.h"
#include "base/text.h"
#include "dns/corefile/options.h"
#include "proxy/options/command_line.h"
#include "proxy/options/command_options.h"
#include "proxy/options/kube_proxy_config.h"
#include "proxy/options/option_table.h"

#ifndef SWITCHBOARD_VERSION
#define SWITCHBOARD_VERSION "unknown"
#endif

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
    environment.read_file = [](const std::string& path) -> Result<std::string> {
        auto text = read_file_text(path);
        if (!text) {
            // A --config that cannot be read is a configuration error (exit 2).
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("{}: {}", path, std::strerror(text.error().errno_value)));
        }
        return text;
    };
    environment.lookup_env = [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) return std::nullopt;
        return std::string(value);
    };
    return environment;
}

namespace {

// Values and file names are quoted in messages, so control characters are
// replaced: the message stays one line.
Error flag_error(std::string_view prefix, const std::string& message) {
    return make_error(ErrorCode::kInvalidArgument,
                      one_line(fmt::format("{}: {}", prefix, message)));
}

// One flag of the command line: its row, the spelling used, its value.
struct Token {
    const OptionSpec* spec;
    std::string spelling;
    std::string text;
};

// Splits the command line (proxy/options/command_line.h) into the table's
// rows. Ignored kube-proxy flags are dropped with one warning each; unknown,
// refused and valueless flags and stray arguments are errors.
Result<std::vector<Token>> tokenize(const std::vector<std::string>& args,
                                    std::vector<std::string>& warnings) {
    auto lookup = [](std::string_view name) -> Result<FlagValue> {
        const OptionSpec* spec = find_flag(name);
        if (spec == nullptr) return flag_error(name, "unknown flag (see --help)");
        if (spec->role == OptionRole::kRefused) {
            return flag_error(name, fmt::format("not supported: {}", spec->help));
        }
        return spec->kind == ValueKind::kBool ? FlagValue::kBoolean : FlagValue::kRequired;
    };
    auto words = split_command_line(args, lookup,
                                    PositionalWords{false, "only flags follow the command word"});
    if (!words) return words.error();
    std::vector<Token> tokens;
    std::vector<const OptionSpec*> warned;
    for (auto& word : *words) {
        const OptionSpec* spec = find_flag(word.name);
        if (spec->role == OptionRole::kIgnored) {
            if (std::find(warned.begin(), warned.end(), spec) == warned.end()) {
                warned.push_back(spec);
                warnings.push_back(
                    fmt::format("{}: accepted for kube-proxy compatibility and ignored: {}",
                                word.name, spec->help));
            }
            continue;
        }
        tokens.push_back(Token{spec, std::move(word.name), std::move(word.value)});
    }
    return tokens;
}

// The last value of each row on the command line (pflag keeps the last).
std::map<const OptionSpec*, const Token*> last_tokens(const std::vector<Token>& tokens) {
    std::map<const OptionSpec*, const Token*> last;
    for (const auto& token : tokens) last[token.spec] = &token;
    return last;
}

// Where a default comes from: with --config, kube-proxy's default for the
// field of the file that was absent; else the flag.
Origin default_origin(const OptionSpec& spec, const std::string& config_file,
                      ConfigVersion version) {
    std::string field(first_field_path(spec, version));
    if (!config_file.empty() && spec.role == OptionRole::kKubeProxy && !field.empty()) {
        return Origin{fmt::format("{}: {}", config_file, field), field};
    }
    std::string name(spec.name());
    return Origin{name, name};
}

// The value of each row: kube-proxy's rule for combining the command line
// with --config (docs/kube-proxy-config.md), then the row's default.
std::optional<OptionValue> choose_value(const OptionSpec& spec, const Token* token,
                                        const std::map<const OptionSpec*, OptionValue>& file,
                                        const std::string& config_file, ConfigVersion version,
                                        std::vector<std::string>& warnings) {
    auto from_token = [&] {
        return OptionValue{&spec, token->text, Origin{token->spelling, token->spelling}};
    };
    bool with_file = !config_file.empty();
    auto in_file = file.find(&spec);
    switch (spec.role) {
        case OptionRole::kKubeProxy:
            if (!with_file) {
                if (token != nullptr) return from_token();
                break;
            }
            if (token != nullptr) {
                warnings.push_back(
                    fmt::format("{}: ignored: --config {} sets kube-proxy's options (only "
                                "--hostname-override and -v apply over it)",
                                token->spelling, config_file));
            }
            if (in_file != file.end()) return in_file->second;
            break;
        case OptionRole::kCommandLineWins:
            // kube-proxy: an empty --hostname-override keeps the file's.
            if (token != nullptr && !(with_file && token->text.empty())) return from_token();
            if (in_file != file.end()) return in_file->second;
            break;
        case OptionRole::kCommandLine:
            if (token != nullptr) return from_token();
            break;
        case OptionRole::kIgnored:
        case OptionRole::kRefused:
            return std::nullopt;
    }
    if (!spec.default_text) return std::nullopt;
    return OptionValue{&spec, std::string(*spec.default_text),
                       default_origin(spec, config_file, version)};
}

// The BridgeInterface and InterfaceNamePrefix detect-local modes need their
// interface. The error is the interface's; when the mode came from the file,
// it says at which line (an absent field has none of its own).
Status check_local_interface(const Options& options,
                             const std::map<std::string_view, Origin>& origins) {
    const auto mode = options.backend.local_detect_mode;
    const bool bridge = mode == rules::LocalDetectMode::kBridgeInterface;
    if ((!bridge && mode != rules::LocalDetectMode::kInterfaceNamePrefix) ||
        !options.backend.local_interface.empty()) {
        return {};
    }
    const Origin& interface =
        origins.at(bridge ? "--pod-bridge-interface" : "--pod-interface-name-prefix");
    const Origin& mode_origin = origins.at("--detect-local-mode");
    std::string message = fmt::format("must be set when the detect-local mode is {}",
                                      bridge ? "BridgeInterface" : "InterfaceNamePrefix");
    if (mode_origin.prefix != mode_origin.name) message += fmt::format(" ({})", mode_origin.prefix);
    return flag_error(interface.prefix, message);
}

// Rules that span options, named after the option that must change.
Status check_combinations(const Options& options, Command command,
                          const std::map<std::string_view, Origin>& origins) {
    bool ipvs = options.proxy_mode == ProxyMode::kIpvs;
    const Origin& sync = origins.at(ipvs ? "--ipvs-sync-period" : "--iptables-sync-period");
    const Origin& min_sync =
        origins.at(ipvs ? "--ipvs-min-sync-period" : "--iptables-min-sync-period");
    if (options.sync_period.count() == 0) return flag_error(sync.prefix, "must be greater than 0");
    if (options.full_sync_period.count() == 0) {
        return flag_error("--full-sync-period", "must be greater than 0");
    }
    if (options.sync_period < options.min_sync_period) {
        return flag_error(
            sync.prefix,
            fmt::format("{} is shorter than {} {}", format_go_duration(options.sync_period),
                        min_sync.name, format_go_duration(options.min_sync_period)));
    }
    if (auto status = check_local_interface(options, origins); !status) return status;
    if (options.dry_run) {
        for (auto [set, flag] : {std::pair{options.cleanup, "--cleanup"},
                                 std::pair{options.cleanup_kube_proxy, "--cleanup-kube-proxy"},
                                 std::pair{options.init_only, "--init-only"}}) {
            if (set) return flag_error(flag, "cannot be combined with --dry-run");
        }
    }
    if (command == Command::kPlan) {
        for (auto [set, flag] :
             {std::pair{options.dry_run, "--dry-run"}, std::pair{options.cleanup, "--cleanup"},
              std::pair{options.cleanup_kube_proxy, "--cleanup-kube-proxy"},
              std::pair{options.init_only, "--init-only"}}) {
            if (set) return flag_error(flag, "cannot be combined with the plan command");
        }
    }
    return {};
}

// kube-proxy's nftables mode answers NodePorts on the node's primary IPs
// when nodePortAddresses is empty (server_linux.go platformApplyDefaults);
// its empty mode is iptables, which keeps every local address. So only a
// mode named nftables (the file's `mode`, or --proxy-mode without --config)
// gets that default: switchboard's own default mode, nftables too, keeps
// every address, as the iptables mode it stands in for does.
void default_nodeport_addresses(Options& options, bool nftables_named) {
    if (!nftables_named || options.nodeport_primary ||
        !options.backend.nodeport_addresses.empty()) {
        return;
    }
    options.nodeport_primary = true;
}

// "a, b, c" in lines of at most 78 columns, indented by two.
std::string wrap_list(std::vector<std::string> items) {
    for (size_t i = 0; i + 1 < items.size(); ++i) items[i] += ',';
    return wrap_words(items, "  ") + "\n";
}

}  // namespace

Result<Options> parse_flags(const std::vector<std::string>& args, const Environment& environment) {
    std::vector<std::string> rest = args;
    Command command = Command::kRun;
    if (!rest.empty() && rest.front() == "plan") {
        command = Command::kPlan;
        rest.erase(rest.begin());
    }
    Options options;
    auto tokens = tokenize(rest, options.warnings);
    if (!tokens) return tokens.error();
    auto last = last_tokens(*tokens);

    // --help and --version answer before anything else is looked at, as
    // kube-proxy's do.
    for (const auto& [spec, token] : last) {
        std::string_view name = spec->name();
        if (name != "--help" && name != "--version") continue;
        auto set = token->text == "raw" ? std::optional<bool>(true) : parse_bool_text(token->text);
        if (!set) {
            return flag_error(token->spelling, fmt::format("\"{}\" is not a boolean", token->text));
        }
        if (*set) {
            Options answer;
            answer.command = name == "--help" ? Command::kHelp : Command::kVersion;
            return answer;
        }
    }

    std::string config_file;
    if (auto it = last.find(find_flag("--config")); it != last.end())
        config_file = it->second->text;
    std::map<const OptionSpec*, OptionValue> file;
    ConfigVersion config_version = ConfigVersion::kV1alpha1;
    if (!config_file.empty()) {
        if (!environment.read_file) return flag_error("--config", "no file reader");
        auto text = environment.read_file(config_file);
        if (!text) return flag_error("--config", text.error().message);
        auto config = parse_kube_proxy_config(*text, config_file);
        if (!config) return config.error();
        config_version = config->version;
        for (auto& value : config->values) file[value.spec] = std::move(value);
        for (auto& warning : config->warnings) options.warnings.push_back(std::move(warning));
    }

    ApplyContext context{options, std::nullopt, std::nullopt};
    std::map<std::string_view, Origin> origins;
    for (const auto& spec : option_table()) {
        auto token = last.find(&spec);
        auto value = choose_value(spec, token == last.end() ? nullptr : token->second, file,
                                  config_file, config_version, options.warnings);
        if (!value) continue;
        if (spec.applies_in != nullptr && !spec.applies_in(options.proxy_mode)) {
            if (token != last.end() && value->origin.name == token->second->spelling) {
                options.warnings.push_back(
                    fmt::format("{}: ignored in {} mode (kube-proxy reads it in another mode only)",
                                value->origin.prefix, to_string(options.proxy_mode)));
            }
            continue;
        }
        if (auto status = spec.apply(value->text, context); !status) {
            return flag_error(value->origin.prefix, status.error().message);
        }
        origins[spec.name()] = std::move(value->origin);
    }

    const OptionSpec* mode_spec = find_flag("--proxy-mode");
    const bool mode_named =
        config_file.empty() ? last.count(mode_spec) != 0 : file.count(mode_spec) != 0;
    default_nodeport_addresses(options, mode_named && options.proxy_mode == ProxyMode::kNftables);

    if (!options.dns_corefile.empty()) {
        if (!environment.read_file) return flag_error("--dns-corefile", "no file reader");
        auto text = environment.read_file(options.dns_corefile);
        if (!text) return flag_error("--dns-corefile", text.error().message);
        dns::CorefileConfig config;
        options.dns_flags = options.dns;
        auto warnings = dns::apply_corefile(
            *text, options.dns_corefile, environment.lookup_env, options.dns,
            /*local_addresses_serve=*/!options.dns_local_addresses.empty(), &config);
        if (!warnings) return warnings.error();
        options.warnings.insert(options.warnings.end(), warnings->begin(), warnings->end());
        options.dns_corefile_config = std::move(config);
        options.dns_corefile_text = std::move(*text);
    }
    if (options.node_name.empty()) options.node_name = trim_lower(environment.node_name_env);
    if (options.node_name.empty()) options.node_name = trim_lower(environment.hostname);
    if (options.node_name.empty()) {
        return flag_error("--hostname-override",
                          "empty, and neither NODE_NAME nor the host name is set");
    }
    if (auto status = check_combinations(options, command, origins); !status) {
        return status.error();
    }
    options.command = command;
    return options;
}

std::string usage() {
    std::string text =
        "switchboard: a node-local kube-proxy and cluster DNS replacement.\n"
        "`switchboard plan [OPTIONS]` prints the Plan as JSON instead of running.\n"
        "`switchboard pod-dns|pod-env|lookup --help`: what a Pod sees (its resolv.conf,\n"
        "its Service environment variables, each step of a name lookup).\n"
        "`switchboard supervise -- switchboard [OPTIONS]`: the container's first process;\n"
        "it holds the listening sockets and restarts a daemon killed by a signal.\n"
        "Exit codes: 0 ok, 1 runtime failure, 2 bad flags or configuration.\n"
        "Flags take --flag=value or --flag value; booleans --flag or --flag=true|false.\n"
        "With --config, kube-proxy's options come from the file; only --hostname-override\n"
        "and -v apply over it (docs/kube-proxy-config.md).\n\nOPTIONS:\n";
    std::vector<std::string> ignored;
    std::string refused;
    for (const auto& spec : option_table()) {
        if (spec.names.empty()) continue;
        const std::string names = fmt::format("{}", fmt::join(spec.names, ", "));
        if (spec.role == OptionRole::kIgnored) {
            ignored.push_back(names);
            continue;
        }
        if (spec.role == OptionRole::kRefused) {
            refused += fmt::format("  {}: {}\n", names, spec.help);
            continue;
        }
        text += fmt::format("  {}\n      {}", names, spec.help);
        if (spec.default_text && !spec.default_text->empty()) {
            text += fmt::format(" (default {})", *spec.default_text);
        }
        if (!spec.fields.empty()) {
            text += fmt::format(" [--config: {}]", spec.fields.front().path);
        }
        text += "\n";
    }
    return fmt::format(
        "{}\nkube-proxy flags accepted with a warning and no effect:\n{}\nkube-proxy flags "
        "refused:\n{}",
        text, wrap_list(ignored), refused);
}

std::string version_text() {
    return fmt::format("switchboard {}\n{}", SWITCHBOARD_VERSION,
                       "kube-proxy compatible: its flags and KubeProxyConfiguration "
                       "kubeproxy.config.k8s.io/v1alpha1 and v1alpha2\n");
}

}  // namespace sb::proxy
