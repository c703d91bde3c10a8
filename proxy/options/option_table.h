// The one declaration of every option switchboard knows: its flag names and
// aliases, the kind of value, its default, its help, the
// KubeProxyConfiguration fields it is read from, and the function that
// validates a value and stores it in Options.
//
// The command line (proxy/options/flags.cpp) and the --config file
// (proxy/options/kube_proxy_config.cpp) both hand their values, as text, to the same
// row's apply(), so a value means the same and is refused with the same words
// wherever it comes from. The table also lists kube-proxy's flags and fields
// that mean nothing here (accepted with a warning) or cannot be honoured
// (refused). docs/kube-proxy-config.md is the table in prose.
//
// The rows are declared by group, each in its own file: kube-proxy's options
// and the run commands (rows_kube_proxy), the DNS server's (rows_dns),
// kube-proxy's accepted-and-ignored and refused ones (rows_ignored); the row
// type is option_spec.h. This file assembles them and looks flags up.
#pragma once

#include <string_view>
#include <vector>

#include "proxy/options/option_spec.h"

namespace sb::proxy {

// Every row, in the order they are applied (--proxy-mode first: other rows
// depend on the mode).
const std::vector<OptionSpec>& option_table();

// The row of a flag name ("--sync-period", "-v"), nullptr if unknown. Names
// are normalised as kube-proxy's pflag set does: '_' counts as '-'.
const OptionSpec* find_flag(std::string_view name);

}  // namespace sb::proxy
