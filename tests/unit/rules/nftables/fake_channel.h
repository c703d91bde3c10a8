// An in-memory kernel for the nftables backend, modelled on knftables'
// fake.go: a batch is applied to tables held as data (chains with hooks and
// rules, sets with their types and elements), all of it or nothing, with the
// refusals the kernel makes (deleting or flushing what does not exist,
// deleting a chain or set still referenced, an element whose value
// differs), and the state is read back the way the netlink channel reads
// it. Tests assert on `tables` after the backend ran, and may change them
// behind the backend's back (drift, a foreign table, the entries the kernel
// adds to the dynamic affinity maps). Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "rules/nftables/nftables_backend.h"

namespace sb::rules::nftables::testing {

struct FakeKernel {
    // The inet family's tables by name. The reference counts of Model
    // (refs, chain_refs) are not kernel state and stay empty.
    std::map<std::string, Model> tables;
    // The next batch is refused with this errno and changes nothing.
    std::optional<int> fail_next_batch;
    // The kernel's handle of each table in `tables`, given when a batch
    // creates it; a test that replaces a table behind the backend's back
    // gives it a new one (or erases it with the table).
    std::map<std::string, uint64_t> handles;
    uint64_t next_handle = 1;
    // What the channel reports as stale netlink answers skipped.
    size_t stale_answers = 0;

    // The table `name` (switchboard's by default); nullptr when absent.
    Model* table(const std::string& name = kTableName);
    // Channels to `table` on this state, for make_backend(options, opener()).
    ChannelOpener opener(std::string table = kTableName);
};

// The kernel state of a model in `nft -f` syntax, for comparisons that
// print a readable difference: chains, rules, sets and static elements,
// plus the elements of dynamic sets, one a line.
std::string kernel_text(const Model& table);

}  // namespace sb::rules::nftables::testing
