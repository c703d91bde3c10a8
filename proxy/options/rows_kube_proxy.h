// The option table's rows of kube-proxy's options, and of the options that
// pick what the process does (proxy/options/option_table.h assembles them).
// Each call builds new rows; pure.
#pragma once

#include <vector>

#include "proxy/options/option_spec.h"

namespace sb::proxy {

// kube-proxy's options with a meaning here, --proxy-mode first (rows after
// it read the mode), in --help's order.
std::vector<OptionSpec> kube_proxy_rows();

// The one-shot runs (--dry-run, --cleanup, --cleanup-kube-proxy,
// --init-only), -v, --help and --version.
std::vector<OptionSpec> run_rows();

}  // namespace sb::proxy
