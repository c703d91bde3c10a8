// Xtables: what the iptables backend needs from the kernel's legacy x_tables
// tables, as a small interface (the shape of kube-proxy's utiliptables
// Interface and knftables' Interface): read a table into a working copy,
// edit the copy, commit it back whole (one atomic table replace), and put a
// table back as it was. The real implementation is libiptc/libip6tc
// (rules/iptables/iptc.h); tests/unit/iptables/fake_xtables.h holds the
// tables in memory as data. Rules travel as model Rules (model.h), so the
// apply logic (rules/iptables/table_apply.h) never sees kernel bytes.
// None of these objects is thread-safe; one caller (the sync runner) at a
// time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/iptables/model.h"

namespace sb::rules::iptables {

// A working copy of one table of one family, read when it was opened
// (libiptc's handle). Edits change only the copy until commit(). Errors name
// the family, the table and the step ("iptables nat table: flush X: ...").
class TableCopy {
  public:
    virtual ~TableCopy() = default;

    // The chain names, built-in ones (PREROUTING, INPUT, ...) or the others.
    virtual std::vector<std::string> chains(bool builtin) const = 0;
    // The target name of each rule of `chain`, in order: a chain name for a
    // jump, else "ACCEPT", "DNAT", ... Empty for a chain that is not there.
    virtual std::vector<std::string> rule_targets(const std::string& chain) const = 0;

    virtual Status create_chain(const std::string& chain) = 0;
    virtual Status flush_chain(const std::string& chain) = 0;
    // Precondition: the chain is empty and nothing jumps to it.
    virtual Status delete_chain(const std::string& chain) = 0;
    // `index` counts from 0 in rule_targets(chain).
    virtual Status delete_rule(const std::string& chain, size_t index) = 0;
    // Preconditions: the rule's jump target exists in the copy; `family`'s
    // addresses only (the renderer's FamilyModel guarantees both).
    virtual Status append_rule(const std::string& chain, const Rule& rule) = 0;
    virtual Status insert_rule(const std::string& chain, const Rule& rule, size_t index) = 0;

    // Replaces the kernel's table with the copy in one step. The kernel
    // refuses a copy of a table that changed since it was read.
    virtual Status commit() = 0;
};

// A table's whole contents (every owner's rules) at one moment, to put back
// after a later commit: the undo of commit_order.h.
class TableBackup {
  public:
    virtual ~TableBackup() = default;
    virtual Status restore() const = 0;
};

// Held while it lives: no cooperating x_tables writer changes a table.
class XtablesLockHold {
  public:
    virtual ~XtablesLockHold() = default;
};

class Xtables {
  public:
    virtual ~Xtables() = default;

    // The xtables lock (/run/xtables.lock for the kernel), held until the
    // returned object is destroyed. An error when another writer keeps it.
    virtual Result<std::unique_ptr<XtablesLockHold>> lock() = 0;
    // Whether the kernel has instantiated `table` of `family`. Opening a
    // legacy table instantiates it (and its hooks), so cleanup asks first.
    virtual bool has_table(IpFamily family, const std::string& table) = 0;
    // Reads `table` ("nat", "filter") of `family` into a working copy.
    virtual Result<std::unique_ptr<TableCopy>> open(IpFamily family, const std::string& table) = 0;
    // The table's current contents, for restore() after a commit. Callers
    // hold the lock from back_up() to restore().
    virtual Result<std::unique_ptr<TableBackup>> back_up(IpFamily family,
                                                         const std::string& table) = 0;
};

}  // namespace sb::rules::iptables
