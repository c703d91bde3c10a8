// The thin kernel edge of the iptables backend: writes a FamilyModel into
// the legacy x_tables kernel interface through libiptc (IPv4) / libip6tc
// (IPv6). Each table is one iptc_commit, i.e. one atomic table replace;
// both are prepared first, then filter is committed before nat, and filter
// is put back when nat fails (commit_order.h), so a refused apply changes
// neither table. Callers serialise (not thread-safe); the
// xtables lock (/run/xtables.lock, as iptables-legacy -w takes it) keeps
// other x_tables writers out during each read-modify-commit.
#pragma once

#include "base/result.h"
#include "rules/iptables/model.h"

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
// repairs drift.
Status apply_family(const FamilyModel& model, const FamilyModel* applied = nullptr);

// Removes every hook rule jumping to a SWITCHBOARD-* chain and every such
// chain from the family's nat and filter tables. Idempotent; commits only
// when it changed something; a table the kernel has not instantiated in
// this network namespace is left alone (opening it would create it).
Status cleanup_family(IpFamily family);

// Own chain names present in `table` of `family` (for tests and drift checks).
Result<std::vector<std::string>> list_own_chains(IpFamily family, const char* table);

}  // namespace sb::rules::iptables
