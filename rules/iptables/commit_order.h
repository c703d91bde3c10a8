// The order in which one family's two x_tables tables are committed, so that
// a failure cannot leave one applied without the other. Each iptc_commit is
// one atomic table replace, but nat and filter are two: filter is committed
// first; when nat then fails, filter's contents from before are put back.
// So a refused sync leaves both tables as they were (or, when even the
// restore fails, says so: the sync fails and its full retry rewrites both).
// docs/iptables.md#commit-order. Pure sequencing over the given steps.
#pragma once

#include <functional>

#include "base/result.h"

namespace sb::rules::iptables {

struct TablePairCommit {
    std::function<Status()> commit_filter;
    std::function<Status()> commit_nat;
    // Puts back filter's contents from before commit_filter (called only
    // after commit_filter succeeded and commit_nat failed).
    std::function<Status()> restore_filter;
};

// Commits filter, then nat; on nat's failure restores filter. Returns the
// first failure, its message saying whether filter was restored.
Status commit_filter_then_nat(const TablePairCommit& steps);

}  // namespace sb::rules::iptables
