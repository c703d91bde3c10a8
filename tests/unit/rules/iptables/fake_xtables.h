// An in-memory x_tables kernel for the iptables backend's unit tests: the
// Xtables interface (rules/iptables/xtables.h) over tables held as data
// (chains of model Rules), in the spirit of knftables' fake and kube-proxy's
// fake iptables. It checks what the kernel and libiptc check, so a wrong
// sequence fails here as it would there:
// - create_chain of an existing chain, flush/append/insert/delete_rule on a
//   missing one, delete_chain of a built-in, non-empty or referenced chain;
// - commit: a jump to a missing chain, DNAT or MASQUERADE outside nat, a
//   copy read before another commit of the same table (libiptc's stale
//   entry count), no xtables lock held;
// - back_up without the lock.
// Opening a table instantiates it with its built-in chains, as the kernel
// does. Failures can be scripted: commits of one table, restores, a whole
// family missing, an unreadable list of tables. Not thread-safe; the state must outlive every
// Xtables made from it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "rules/iptables/xtables.h"

namespace sb::rules::iptables::testing {

struct FakeChain {
    bool builtin = false;
    std::vector<Rule> rules;
    bool operator==(const FakeChain&) const = default;
};

// One table as the kernel holds it: every owner's chains, by name.
struct FakeTable {
    std::map<std::string, FakeChain> chains;
    bool operator==(const FakeTable&) const = default;
};

class FakeXtablesKernel {
  public:
    // An Xtables over this state (several may share it: a restarted daemon).
    std::unique_ptr<Xtables> xtables();

    // nullptr when the table is not instantiated.
    const FakeTable* table(IpFamily family, const std::string& name) const;
    // Instantiates the table (built-in chains, empty) when needed and gives
    // it for direct edits: others' rules, drift. Counts as a change (copies
    // read before it are stale).
    FakeTable& edit(IpFamily family, const std::string& name);
    // The own (SWITCHBOARD-*) chains of a table, by name.
    std::map<std::string, FakeChain> own_chains(IpFamily family, const std::string& name) const;
    // The targets of a chain's rules (none when the table or chain is absent).
    std::vector<std::string> targets(IpFamily family, const std::string& table,
                                     const std::string& chain) const;

    // The next `count` commits of that table are refused (the copy is not
    // written). Does not instantiate the table.
    void fail_commits(IpFamily family, const std::string& table, size_t count = 1);
    // The next `count` restores of a backup are refused.
    void fail_restores(size_t count = 1) { restore_failures_ = count; }
    // The kernel has no x_tables of this family: opening any table fails.
    void remove_family(IpFamily family) { missing_.insert(family); }
    // has_table() of this family fails with `err` (the list of tables is
    // unreadable).
    void refuse_table_list(IpFamily family, int err) { table_list_errors_[family] = err; }

    // Successful commits of that table so far.
    size_t commits(IpFamily family, const std::string& table) const;
    size_t restores() const { return restores_; }

  private:
    friend class FakeXtables;
    friend class FakeTableCopy;
    friend class FakeBackup;
    using Key = std::pair<IpFamily, std::string>;
    struct Stored {
        FakeTable table;
        size_t generation = 0;  // bumped by every change
        size_t commits = 0;
    };
    Stored& instantiate(const Key& key);

    std::map<Key, Stored> tables_;
    std::map<Key, size_t> commit_failures_;
    std::set<IpFamily> missing_;
    std::map<IpFamily, int> table_list_errors_;
    size_t restore_failures_ = 0;
    size_t restores_ = 0;
    bool locked_ = false;
};

}  // namespace sb::rules::iptables::testing
