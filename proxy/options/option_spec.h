// The row type of the option table (proxy/options/option_table.h): what one
// option is, where its value comes from and how a value is applied; and the
// text rules every row's value follows (pflag's booleans, kube-proxy's zero
// values). Plain data and pure functions: rows are built once, then only
// read, from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "proxy/options/options.h"

namespace sb::proxy {

// How the option combines with --config (kube-proxy's rule, written down in
// docs/kube-proxy-config.md).
enum class OptionRole {
    // A kube-proxy option: with --config the file decides (kube-proxy's
    // defaults for absent fields) and the flag is ignored with a warning;
    // without --config the command line does.
    kKubeProxy,
    // Read from the command line, --config or not: switchboard's own options
    // and the kube-proxy flags the file has no field for (--master,
    // --cleanup, --init-only...).
    kCommandLine,
    // In the file too, but a flag on the command line wins over it
    // (--hostname-override, -v: processHostnameOverrideFlag, copyLogsFromFlags).
    kCommandLineWins,
    // A kube-proxy flag or field with no meaning here: accepted, one warning.
    kIgnored,
    // A kube-proxy flag switchboard cannot honour: exit 2 with the help text.
    kRefused,
};

enum class ValueKind {
    kString,
    kBool,  // a flag without a value means true; the file wants a YAML boolean
    kInt,
    kDuration,  // a Go duration
    kList,      // comma-separated on the command line, a YAML list in the file
    kMap,       // only in the file (featureGates, winkernel): ignored rows only
};

// The sections of KubeProxyConfiguration kube-proxy reads for its mode: it
// takes syncPeriod, minSyncPeriod, masqueradeAll and masqueradeBit from
// iptables.* for mode "" and iptables, from nftables.* for nftables and from
// ipvs.* (masqueradeBit: iptables.*) for ipvs.
enum Section : uint8_t {
    kIptablesSection = 1,
    kNftablesSection = 2,
    kIpvsSection = 4,
    kEverySection = 7,
};

struct ConfigField {
    std::string_view path = {};  // "iptables.syncPeriod"
    uint8_t sections = kEverySection;
    // kube-proxy's defaulting (v1alpha1 SetDefaults) replaces the zero value
    // ("", 0s, 0) of this field by the default: for it, zero means absent.
    bool zero_is_absent = false;
    // The value when the field is absent, where kube-proxy's file default
    // differs from its flag default (ipvs.minSyncPeriod: 0s, not 1s).
    std::optional<std::string_view> absent_value = std::nullopt;
};

// Where a value came from, for messages: `prefix` starts an error or warning
// ("--sync-period", "config.conf:12: iptables.syncPeriod"), `name` mentions
// it inside another message ("--sync-period", "iptables.syncPeriod").
struct Origin {
    std::string prefix;
    std::string name;
};

struct OptionSpec;

// One value for a row, as text, from the command line, the file or a
// default.
struct OptionValue {
    const OptionSpec* spec = nullptr;
    std::string text;
    Origin origin;
};

// Scratch state of one parse, for options that depend on others: kube-proxy's
// deprecated --healthz-port / --metrics-port give the port of a bind address
// that has none (0: that server is off).
struct ApplyContext {
    Options& options;
    std::optional<uint16_t> healthz_port;
    std::optional<uint16_t> metrics_port;
};

struct OptionSpec {
    // "--canonical-name" first, then aliases ("-v" style shorthands too);
    // empty for fields that exist only in the file.
    std::vector<std::string_view> names = {};
    ValueKind kind = ValueKind::kString;
    OptionRole role = OptionRole::kKubeProxy;
    // The text an absent option stands for; nullopt: absent means "not set"
    // and apply() is not called.
    std::optional<std::string_view> default_text = std::nullopt;
    // For --help; for ignored and refused rows, why.
    std::string_view help = {};
    std::vector<ConfigField> fields = {};
    // Validates `text` and stores it. Errors are kInvalidArgument, one line,
    // without the flag's name (the caller prefixes the Origin).
    Status (*apply)(std::string_view text, ApplyContext& context) = nullptr;
    // kube-proxy reads some flags only in some modes (--ipvs-sync-period in
    // ipvs mode, --iptables-sync-period otherwise); nullptr: every mode.
    bool (*applies_in)(ProxyMode mode) = nullptr;

    std::string_view name() const { return names.empty() ? fields.front().path : names.front(); }
};

// Whether `text` is the zero value of `kind` ("", "0", "0s", "false"...).
bool is_zero_text(ValueKind kind, std::string_view text);

}  // namespace sb::proxy
