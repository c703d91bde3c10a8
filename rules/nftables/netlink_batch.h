// The messages of switchboard's nftables transactions, written into an
// NftBatch (rules/kernel/nft_batch.h, of the inet family) in the order a
// Delta lists them (rules/nftables/diff.h). Writes bytes only; rules::send()
// sends them.
#pragma once

#include <string>

#include "rules/kernel/nft_batch.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/model.h"

namespace sb::rules::nftables {

// switchboard's table (created when missing), then `delta`'s steps; rules
// and element values from `desired`.
void write_delta(NftBatch& batch, const Delta& delta, const Model& desired);

// `table` (of the inet family) made exactly `model`, chains and rules only:
// created, deleted and created again, then filled.
void write_replacement(NftBatch& batch, const std::string& table, const Model& model);

// NFT_MSG_DELTABLE of `table`.
void write_table_deletion(NftBatch& batch, const std::string& table);

}  // namespace sb::rules::nftables
