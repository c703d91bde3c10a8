#include "rules/nftables/affinity_cleanup.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "base/log.h"
#include "rules/nftables/render.h"

namespace sb::rules::nftables {

namespace {

using EndpointSet = std::set<std::pair<IpAddress, uint16_t>>;

bool leads_to_chain(const Expr& e) {
    return e.kind == ExprKind::kVerdict &&
           (e.verdict.kind == VerdictKind::kJump || e.verdict.kind == VerdictKind::kGoto);
}

// The endpoints the rules of a model record in an affinity map, per chain:
// its own affinity updates and those of every chain it jumps or goes to.
// Each chain is walked once.
class AffinityTargets {
  public:
    explicit AffinityTargets(const Model& model) : model_(model) {}

    const EndpointSet& of_chain(const std::string& name) {
        if (auto known = by_chain_.find(name); known != by_chain_.end()) return known->second;
        // Entered (empty) before the walk, so that a loop, which nftables
        // refuses anyway, ends; std::map keeps the reference valid.
        EndpointSet& out = by_chain_[name];
        auto chain = model_.chains.find(name);
        if (chain == model_.chains.end()) return out;
        EndpointSet found;
        for (const Rule& rule : chain->second.rules) {
            for (const Expr& e : rule) {
                if (e.kind == ExprKind::kAffinityUpdate) found.emplace(e.prefix.address(), e.port);
                if (leads_to_chain(e)) {
                    const EndpointSet& next = of_chain(e.verdict.chain);
                    found.insert(next.begin(), next.end());
                }
            }
        }
        out = std::move(found);
        return out;
    }

  private:
    const Model& model_;
    std::map<std::string, EndpointSet> by_chain_;
};

// The chain an element of a verdict map sends to; nullopt without the map or
// the element.
std::optional<std::string> goto_chain(const Set* map, const ElementKey& key) {
    if (!map) return std::nullopt;
    auto element = map->elements.find(key);
    if (element == map->elements.end()) return std::nullopt;
    return element->second.chain;
}

const Set* find_set(const Model& model, const std::string& name) {
    auto set = model.sets.find(name);
    return set == model.sets.end() ? nullptr : &set->second;
}

Status delete_stale_entries(Channel& channel, const Model& applied, IpFamily family) {
    Model map;
    Set& set = map.sets[affinity_map(family)];
    set.name = affinity_map(family);
    set.layout = SetLayout::kAffinity;
    set.family = family;
    auto entries = channel.dump_elements(set);
    if (!entries) return entries.error();
    Delta delta;
    for (const ElementKey& key : stale_affinity_entries(applied, family, *entries)) {
        delta.del_elements.emplace_back(set.name, key);
    }
    if (delta.del_elements.empty()) return {};
    return channel.apply(delta, map);
}

}  // namespace

std::vector<ElementKey> stale_affinity_entries(const Model& model, IpFamily family,
                                               const ElementMap& entries) {
    const Set* by_address = find_set(model, services_map(family));
    const Set* by_port = find_set(model, nodeports_map(family));
    AffinityTargets targets(model);
    std::vector<ElementKey> out;
    for (const auto& [key, value] : entries) {
        // Where the services chain sends a new connection to this frontend:
        // the address map first, then the NodePorts, as the kernel looks.
        std::optional<std::string> chain = goto_chain(by_address, {key.b, {}, key.proto, key.port});
        if (!chain) chain = goto_chain(by_port, {{}, {}, key.proto, key.port});
        if (!chain || !targets.of_chain(*chain).count({value.address, value.port})) {
            out.push_back(key);
        }
    }
    return out;
}

bool affinity_changed(const std::vector<PortChange>& changed) {
    for (const auto& [old, now] : changed) {
        if ((old && old->session_affinity.client_ip) || (now && now->session_affinity.client_ip)) {
            return true;
        }
    }
    return false;
}

void clean_affinity(Channel& channel, const Model& applied) {
    for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        if (Status s = delete_stale_entries(channel, applied, family); !s) {
            log::warn("nftables: affinity cleanup failed: {}", s.error().describe());
        }
    }
}

}  // namespace sb::rules::nftables
