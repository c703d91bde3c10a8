// The apply logic of the iptables backend over the Xtables interface
// (xtables.h): what to flush, create, fill, delete and hook in one family's
// nat and filter tables, the order of the two commits (commit_order.h) and
// the cleanup. It decides from the tables' chain names and rule targets and
// from the last applied model, so it runs the same against libiptc
// (iptc.h) and the in-memory fake of the unit tests. Not thread-safe (one
// caller at a time); every read-modify-commit holds the xtables lock.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "rules/conntrack.h"
#include "rules/iptables/model.h"
#include "rules/iptables/xtables.h"

namespace sb::rules::iptables {

// Makes the family's nat and filter tables hold exactly `model`'s own
// chains (created or flushed and refilled; stale SWITCHBOARD-* chains
// deleted) and its hook rules (inserted at the top of the built-in chains
// when missing; stray or duplicate jumps to SWITCHBOARD-* removed). Rules
// of other owners are left as they are.
// `applied`: what the last successful apply_family wrote (nullptr: unknown).
// Own chains whose rules are equal there and that the kernel still has are
// left untouched, so a partial sync rewrites only what changed (the commit
// still replaces the whole table); nullptr rewrites every own chain, which
// repairs drift. Both tables are prepared before either is committed, then
// filter is committed before nat and put back when nat fails, so a refused
// apply changes neither table (commit_order.h).
// `dnated_before`: when not null, the UDP frontends that the nat table's own
// dispatch chains (SWITCHBOARD-SERVICES, SWITCHBOARD-NODEPORTS) sent to a
// DNAT before this apply are appended to it, for the UDP conntrack
// reconciler (rules/conntrack.h); read from the copy the apply opens anyway.
Status apply_family(Xtables& xtables, const FamilyModel& model,
                    const FamilyModel* applied = nullptr, UdpFrontends* dnated_before = nullptr);

// Removes every hook rule jumping to a SWITCHBOARD-* chain and every such
// chain from the family's nat and filter tables. Idempotent; commits only
// when it changed something; a table the kernel has not instantiated is
// left alone (opening it would create it).
Status cleanup_family(Xtables& xtables, IpFamily family);

// Own chain names present in `table` of `family` (for tests and drift checks).
Result<std::vector<std::string>> list_own_chains(Xtables& xtables, IpFamily family,
                                                 const std::string& table);

}  // namespace sb::rules::iptables
