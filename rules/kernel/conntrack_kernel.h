// The kernel's conntrack table (rules/kernel/conntrack_table.h ConntrackTable) through
// libnetfilter_conntrack: a dump filtered by family in the kernel (UDP is
// picked out here, as libnetfilter_conntrack 1.0.9 offers no protocol filter
// for dumps) and deletions by original tuple, zone and id. Each call opens
// its own netlink handle and closes it. Not thread-safe.
#pragma once

#include <memory>

#include "rules/kernel/conntrack_table.h"

namespace sb::rules {

// Touches no kernel state until used.
std::unique_ptr<ConntrackTable> make_kernel_conntrack_table();

}  // namespace sb::rules
