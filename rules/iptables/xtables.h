// Xtables: what the iptables backend needs from the kernel's legacy x_tables
// tables, as a small interface (the shape of kube-proxy's utiliptables
// Interface and knftables' Interface): rules/kernel/xtables.h (read a table into a
// working copy, edit the copy, commit it back whole: one atomic table
// replace) with rule writing and backups (put a table back as it was). The
// real implementation is libiptc/libip6tc (rules/iptables/iptc.h);
// tests/unit/rules/iptables/fake_xtables.h holds the tables in memory as data.
// Rules travel as model Rules (model.h), so the apply logic
// (rules/iptables/table_apply.h) never sees kernel bytes. None of these
// objects is thread-safe; one caller (the sync runner) at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/iptables/model.h"
#include "rules/kernel/xtables.h"

namespace sb::rules::iptables {

// rules/kernel/xtables.h's working copy, which can also create chains, write
// rules and read what they match on the destination.
class TableCopy : public XtablesTableCopy {
  public:
    // One per rule of `chain`, in order (none for a chain that is not there).
    virtual std::vector<DestinationMatch> destination_matches(const std::string& chain) const = 0;
    virtual Status create_chain(const std::string& chain) = 0;
    // Preconditions: the rule's jump target exists in the copy; `family`'s
    // addresses only (the renderer's FamilyModel guarantees both).
    virtual Status append_rule(const std::string& chain, const Rule& rule) = 0;
    virtual Status insert_rule(const std::string& chain, const Rule& rule, size_t index) = 0;
};

// A table's whole contents (every owner's rules) at one moment, to put back
// after a later commit: the undo of commit_order.h.
class TableBackup {
  public:
    virtual ~TableBackup() = default;
    virtual Status restore() const = 0;
};

class Xtables : public XtablesTables {
  public:
    // Reads `table` of `family` into a working copy.
    virtual Result<std::unique_ptr<TableCopy>> open(IpFamily family, const std::string& table) = 0;
    // open(), as the copy of rules/kernel/xtables.h.
    Result<std::unique_ptr<XtablesTableCopy>> open_table(IpFamily family,
                                                         const std::string& table) final {
        auto copy = open(family, table);
        if (!copy) return copy.error();
        return std::unique_ptr<XtablesTableCopy>(std::move(copy.value()));
    }
    // The table's current contents, for restore() after a commit. Callers
    // hold the lock from back_up() to restore().
    virtual Result<std::unique_ptr<TableBackup>> back_up(IpFamily family,
                                                         const std::string& table) = 0;
};

}  // namespace sb::rules::iptables
