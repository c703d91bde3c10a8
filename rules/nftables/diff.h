// Diff: the minimal change that turns one model into another, in the order
// a single nftables transaction must carry it (see Delta). Pure.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rules/nftables/model.h"
#include "rules/nftables/render.h"
#include "rules/port_changes.h"

namespace sb::rules::nftables {

using ElementId = std::pair<std::string, ElementKey>;  // set name, key

// The batch, in message order: references are always removed before what
// they point at is deleted, and created before anything points at them.
//   1. table (created if missing; never deleted)
//   2. flush_chains: rules of chains that are refilled or deleted
//   3. flush_sets: elements of sets that are refilled
//   4. del_elements   5. del_chains   6. del_sets
//   7. add_sets       8. add_chains   9. fill_chains (rules from the new model)
//  10. fill_sets: every element of these sets (recreated or flushed), then
//      add_elements (values from the new model)
// A set refilled whole is named once instead of listing its elements: at
// 10k Services x 10 endpoints the list held 20-30 MB during a full sync
// (docs/nftables.md, "Memory").
struct Delta {
    std::vector<std::string> flush_chains;
    std::vector<std::string> flush_sets;
    std::vector<ElementId> del_elements;
    std::vector<std::string> del_chains;
    std::vector<std::string> del_sets;
    std::vector<std::string> add_sets;
    std::vector<std::string> add_chains;
    std::vector<std::string> fill_chains;
    std::vector<std::string> fill_sets;
    std::vector<ElementId> add_elements;

    bool empty() const;
    // Chains, sets, rules and elements the batch carries (rules and the
    // elements of fill_sets counted from `desired`).
    size_t objects(const Model& desired) const;
};

// old -> desired. With old_contents_known false (a model read back from the
// kernel: chain and set names and types only, neither rules nor elements)
// every chain and static set present in both is flushed and refilled:
// correct whatever the kernel holds, and still one atomic transaction, so
// traffic never sees a gap. Dynamic sets' elements are never touched.
Delta diff(const Model& old, const Model& desired, bool old_contents_known);

// The incremental path: replaces fragments in `model` in place (each pair is
// old, new; either may be null) and returns the delta for the touched
// chains and elements only. Cost proportional to the fragments, not the model.
using FragmentChange = std::pair<const Fragment*, const Fragment*>;
Delta update_model(Model& model, const std::vector<FragmentChange>& changes);

// The delta as `nft -f` commands (one transaction when loaded), values taken
// from `desired`; for debugging and as the benchmark's peer.
std::string to_nft_text(const Delta& delta, const Model& desired);

}  // namespace sb::rules::nftables
