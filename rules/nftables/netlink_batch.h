// The batch writer: the messages of one nftables transaction, written into
// a Batch (rules/nftables/netlink_transaction.h) in the order a Delta lists them
// (rules/nftables/diff.h). Writes bytes only; send()
// sends them.
#pragma once

#include <string>

#include "rules/nftables/diff.h"
#include "rules/nftables/model.h"
#include "rules/nftables/netlink_transaction.h"

namespace sb::rules::nftables {

// switchboard's table (created when missing), then `delta`'s steps; rules
// and element values from `desired`.
void write_delta(Batch& batch, const Delta& delta, const Model& desired);

// `table` (of the inet family) made exactly `model`, chains and rules only:
// created, deleted and created again, then filled.
void write_replacement(Batch& batch, const std::string& table, const Model& model);

// NFT_MSG_DELTABLE of `table`.
void write_table_deletion(Batch& batch, const std::string& table);

}  // namespace sb::rules::nftables
