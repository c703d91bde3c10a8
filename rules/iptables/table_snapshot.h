// A whole x_tables table as the kernel holds it, read with the kernel's own
// getsockopt interface (IPT_SO_GET_INFO + IPT_SO_GET_ENTRIES, the IPv6
// equivalents for ip6tables) and put back with one IPT_SO_SET_REPLACE: the
// undo of a commit (rules/iptables/commit_order.h). libiptc cannot do it: a
// handle read before a commit is refused afterwards (its entry count no
// longer matches the table's). Callers hold the xtables lock from take() to
// restore(), so no cooperating writer changes the table in between.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules::iptables {

class TableSnapshot {
  public:
    // The table's current contents (all owners' rules, not only ours).
    static Result<TableSnapshot> take(IpFamily family, const std::string& table);
    // Replaces the table with the contents take() read. The rules' packet
    // counters restart from the snapshot's.
    Status restore() const;

  private:
    TableSnapshot() = default;

    IpFamily family_ = IpFamily::kV4;
    std::string table_;
    uint32_t valid_hooks_ = 0;
    std::array<uint32_t, 5> hook_entry_{};  // NF_INET_NUMHOOKS
    std::array<uint32_t, 5> underflow_{};
    uint32_t num_entries_ = 0;
    std::vector<char> entries_;  // the kernel's entry blob, `size` bytes
};

}  // namespace sb::rules::iptables
