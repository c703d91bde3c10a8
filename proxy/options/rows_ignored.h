// The option table's rows of kube-proxy's flags and fields that mean nothing
// here (accepted with one warning) or cannot be honoured (refused);
// proxy/options/option_table.h assembles them. Each call builds new rows;
// pure.
#pragma once

#include <vector>

#include "proxy/options/option_spec.h"

namespace sb::proxy {

// The accepted-and-ignored rows, then the refused ones, in --help's order.
std::vector<OptionSpec> ignored_rows();

}  // namespace sb::proxy
