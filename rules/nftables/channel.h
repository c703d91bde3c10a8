// The nftables backend's whole conversation with the kernel, as a small
// interface: read switchboard's table back, apply one batch, dump a set's
// elements, delete the table. NetlinkSocket (rules/nftables/netlink.h) is
// the real one; tests/unit/rules/nftables/fake_channel.h applies batches to an
// in-memory table instead (as knftables' fake does for kube-proxy), so the
// backend's full/incremental/repair logic is tested without root.
// Implementations need not be thread-safe: the backend makes one call at a
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/result.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/model.h"

namespace sb::rules::nftables {

class Channel {
  public:
    virtual ~Channel() = default;

    // The `inet switchboard` table as the kernel has it: chains with their
    // hooks and sets with their types; neither rules nor elements are read
    // (a dump of a 100k element set costs the kernel seconds), so
    // diff(..., false) refills them. nullopt when the table does not exist.
    // Sets of a type switchboard does not create are marked unknown, so
    // diff() replaces them.
    virtual Result<std::optional<Model>> read_table() = 0;

    // One transaction, all or nothing: the table is created if missing, then
    // the Delta's steps in order, rules and element values taken from
    // `desired`, element keys' types from desired's sets (a deleted element
    // is looked up there by key only). The kernel refuses a batch that
    // deletes or flushes what does not exist, or deletes what is still
    // referenced; the table is then unchanged.
    virtual Status apply(const Delta& delta, const Model& desired) = 0;

    // The kernel's handle of the table, which a table deleted and created
    // again (by anyone) does not keep; nullopt when the table does not
    // exist. One small request: the periodic sync's drift check.
    virtual Result<std::optional<uint64_t>> table_handle() = 0;

    // How many rules `chain` of the table holds; an error of code kNotFound
    // when the table or the chain does not exist. One small dump for a base
    // chain: the drift check's look at a flushed table.
    virtual Result<size_t> rule_count(const std::string& chain) = 0;

    // The elements of `set` (of the table, with `set`'s layout and family)
    // as the kernel holds them now, for the dynamic affinity maps, which the
    // kernel fills: keys, and the address-and-port values (a verdict map's
    // verdicts are not read). Elements that do not decode as the layout are
    // left out.
    virtual Result<ElementMap> dump_elements(const Set& set) = 0;

    // Deletes the table (and so everything in it). Idempotent.
    virtual Status delete_table() = 0;

    // Netlink answers of earlier requests found and skipped since the
    // channel was opened (rules/kernel/netlink_answers.h); never charged to a
    // later request.
    virtual size_t stale_answers() const = 0;
};

}  // namespace sb::rules::nftables
