// The option table's rows of the DNS server (--cluster-domain, --dns-*,
// CoreDNS's names where they exist; proxy/options/option_table.h assembles
// them). Each call builds new rows; pure.
#pragma once

#include <vector>

#include "proxy/options/option_spec.h"

namespace sb::proxy {

// The DNS server's rows, then its response-rate limiter's, in --help's order.
std::vector<OptionSpec> dns_rows();

}  // namespace sb::proxy
