// The kernel's legacy x_tables tables as every x_tables user in rules/ needs
// them: read a table into a working copy, read its chains and the targets of
// their rules, remove rules and chains, commit the copy back whole (one
// atomic table replace); the xtables lock; whether a table exists. The
// iptables backend extends it with rule writing and backups
// (rules/iptables/xtables.h: Xtables, whose libiptc implementation serves
// both); --cleanup-kube-proxy (rules/kube_proxy_cleanup) uses this part to
// remove kube-proxy's chains. tests/unit/rules/iptables/fake_xtables.h holds the
// tables in memory. None of these objects is thread-safe; one caller at a
// time.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules {

// A working copy of one table of one family, read when it was opened
// (libiptc's handle). Edits change only the copy until commit(). Errors name
// the family, the table and the step ("iptables nat table: flush X: ...").
class XtablesTableCopy {
  public:
    virtual ~XtablesTableCopy() = default;

    // The chain names, built-in ones (PREROUTING, INPUT, ...) or the others.
    virtual std::vector<std::string> chains(bool builtin) const = 0;
    // The target name of each rule of `chain`, in order: a chain name for a
    // jump, else "ACCEPT", "DNAT", ... Empty for a chain that is not there.
    virtual std::vector<std::string> rule_targets(const std::string& chain) const = 0;

    virtual Status flush_chain(const std::string& chain) = 0;
    // Precondition: the chain is empty and nothing jumps to it.
    virtual Status delete_chain(const std::string& chain) = 0;
    // `index` counts from 0 in rule_targets(chain).
    virtual Status delete_rule(const std::string& chain, size_t index) = 0;

    // Replaces the kernel's table with the copy in one step. The kernel
    // refuses a copy of a table that changed since it was read.
    virtual Status commit() = 0;
};

// Held while it lives: no cooperating x_tables writer changes a table.
class XtablesLockHold {
  public:
    virtual ~XtablesLockHold() = default;
};

class XtablesTables {
  public:
    virtual ~XtablesTables() = default;

    // The xtables lock (/run/xtables.lock for the kernel), held until the
    // returned object is destroyed. An error when another writer keeps it.
    virtual Result<std::unique_ptr<XtablesLockHold>> lock() = 0;
    // Whether the kernel has instantiated `table` of `family` (false when
    // the kernel has no x_tables of that family at all). Opening a legacy
    // table instantiates it (and its hooks), so a cleanup asks first. An
    // error when the kernel's list of tables cannot be read.
    virtual Result<bool> has_table(IpFamily family, const std::string& table) = 0;
    // Reads `table` ("nat", "filter", "mangle") of `family` into a working copy.
    virtual Result<std::unique_ptr<XtablesTableCopy>> open_table(IpFamily family,
                                                                 const std::string& table) = 0;
};

}  // namespace sb::rules
