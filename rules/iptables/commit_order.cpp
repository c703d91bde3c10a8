#include "rules/iptables/commit_order.h"

#include <fmt/format.h>

namespace sb::rules::iptables {

Status commit_filter_then_nat(const TablePairCommit& steps) {
    if (Status s = steps.commit_filter(); !s) return s;  // nothing was changed
    Status nat = steps.commit_nat();
    if (nat) return {};
    Error error = nat.error();
    if (Status restored = steps.restore_filter(); restored) {
        error.message += " (filter table restored: neither table changed)";
    } else {
        error.message +=
            fmt::format("; restoring the filter table failed too, it holds the new rules: {}",
                        restored.error().describe());
    }
    return error;
}

}  // namespace sb::rules::iptables
