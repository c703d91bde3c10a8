#include "rules/iptables/table_apply.h"

#include <netinet/in.h>

#include <map>
#include <memory>
#include <set>

#include "rules/iptables/commit_order.h"
#include "rules/iptables/render.h"

namespace sb::rules::iptables {

namespace {

bool own(const std::string& chain) {
    return chain.rfind(kChainPrefix, 0) == 0;
}

// Deletes the rules of a built-in chain that jump to own chains, except
// the first jump to each chain in `keep`. Returns the kept targets; sets
// `changed` when it deleted something.
Result<std::set<std::string>> prune_hooks(TableCopy& copy, const std::string& builtin,
                                          const std::set<std::string>& keep, bool& changed) {
    std::set<std::string> kept;
    std::vector<size_t> doomed;
    const std::vector<std::string> targets = copy.rule_targets(builtin);
    for (size_t i = 0; i < targets.size(); ++i) {
        if (!own(targets[i])) continue;
        if (keep.count(targets[i]) && kept.insert(targets[i]).second) continue;
        doomed.push_back(i);
    }
    for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
        if (Status s = copy.delete_rule(builtin, *it); !s) return s.error();
    }
    changed = changed || !doomed.empty();
    return kept;
}

// What rules/conntrack.h calls the frontends a table DNATs: the host
// address:port rules of SWITCHBOARD-SERVICES and the port rules of
// SWITCHBOARD-NODEPORTS that jump to an own chain (which DNATs; a frontend
// without endpoints has no rule in nat).
void read_dnated_udp_frontends(const TableCopy& nat, UdpFrontends& out) {
    for (const DestinationMatch& m : nat.destination_matches(kServicesChain)) {
        if (m.proto != IPPROTO_UDP || m.dport == 0 || !own(m.target)) continue;
        if (!m.destination || m.destination_negate) continue;
        const IpAddress& address = m.destination->address();
        if (m.destination->length() == (address.is_v4() ? 32 : 128)) {
            out.addresses.emplace_back(address, m.dport);
        }
    }
    for (const DestinationMatch& m : nat.destination_matches(kNodePortsChain)) {
        if (m.proto == IPPROTO_UDP && m.dport != 0 && own(m.target)) {
            out.node_ports.push_back(m.dport);
        }
    }
}

// Flushes all of `names` first, then deletes them: they may jump to each other.
Status remove_chains(TableCopy& copy, const std::vector<std::string>& names) {
    for (const std::string& c : names) {
        if (Status s = copy.flush_chain(c); !s) return s;
    }
    for (const std::string& c : names) {
        if (Status s = copy.delete_chain(c); !s) return s;
    }
    return {};
}

// Makes the copy hold `table` (not committed).
Status prepare_table(TableCopy& copy, const Table& table, const Table* applied) {
    std::map<std::string, std::vector<const HookRule*>> hooks;
    for (const HookRule& hook : table.hooks) hooks[hook.builtin].push_back(&hook);
    std::map<std::string, std::set<std::string>> present;
    bool changed = false;  // prune_hooks reports it; an apply commits regardless
    for (const std::string& builtin : copy.chains(true)) {
        std::set<std::string> keep;
        for (const HookRule* hook : hooks[builtin]) keep.insert(hook->rule.target.chain);
        auto kept = prune_hooks(copy, builtin, keep, changed);
        if (!kept) return kept.error();
        present[builtin] = std::move(kept.value());
    }
    // Own chains that the last apply wrote with the same rules and that the
    // kernel still has are kept as they are (partial sync).
    auto kept = [&](const std::string& name, const Chain& chain) {
        if (!applied) return false;
        auto it = applied->chains.find(name);
        return it != applied->chains.end() && it->second == chain;
    };
    std::vector<std::string> stale;
    std::set<std::string> existing;
    for (const std::string& c : copy.chains(false)) {
        existing.insert(c);
        if (!own(c)) continue;
        auto wanted = table.chains.find(c);
        if (wanted == table.chains.end()) {
            stale.push_back(c);
        } else if (!kept(c, wanted->second)) {
            if (Status s = copy.flush_chain(c); !s) return s;
        }
    }
    for (const auto& [name, chain] : table.chains) {
        if (existing.count(name)) continue;
        if (Status s = copy.create_chain(name); !s) return s;
    }
    for (const auto& [name, chain] : table.chains) {
        if (existing.count(name) && kept(name, chain)) continue;
        for (const Rule& rule : chain.rules) {
            if (Status s = copy.append_rule(name, rule); !s) return s;
        }
    }
    if (Status s = remove_chains(copy, stale); !s) return s;
    for (auto& [builtin, list] : hooks) {
        for (auto it = list.rbegin(); it != list.rend(); ++it) {
            const Rule& rule = (*it)->rule;
            if (present[builtin].count(rule.target.chain)) continue;
            if (Status s = copy.insert_rule(builtin, rule, 0); !s) return s;
        }
    }
    return {};
}

Status cleanup_table(Xtables& xtables, IpFamily family, const std::string& table) {
    auto present = xtables.has_table(family, table);
    if (!present) return present.error();
    if (!*present) return {};
    auto copy = xtables.open(family, table);
    if (!copy) return copy.error();
    bool changed = false;
    for (const std::string& builtin : (*copy)->chains(true)) {
        if (auto kept = prune_hooks(**copy, builtin, {}, changed); !kept) return kept.error();
    }
    std::vector<std::string> mine;
    for (const std::string& c : (*copy)->chains(false)) {
        if (own(c)) mine.push_back(c);
    }
    if (Status s = remove_chains(**copy, mine); !s) return s;
    if (!changed && mine.empty()) return {};
    return (*copy)->commit();
}

}  // namespace

Status apply_family(Xtables& xtables, const FamilyModel& model, const FamilyModel* applied,
                    UdpFrontends* dnated_before) {
    auto lock = xtables.lock();
    if (!lock) return lock.error();
    // Both tables are prepared before either is committed, and filter's
    // contents are kept for the undo: commit_order.h.
    auto nat = xtables.open(model.family, model.nat.name);
    if (!nat) return nat.error();
    if (dnated_before) read_dnated_udp_frontends(**nat, *dnated_before);
    if (Status s = prepare_table(**nat, model.nat, applied ? &applied->nat : nullptr); !s) {
        return s;
    }
    auto filter = xtables.open(model.family, model.filter.name);
    if (!filter) return filter.error();
    if (Status s = prepare_table(**filter, model.filter, applied ? &applied->filter : nullptr);
        !s) {
        return s;
    }
    auto before = xtables.back_up(model.family, model.filter.name);
    if (!before) return before.error();
    return commit_filter_then_nat({[&] { return (*filter)->commit(); },
                                   [&] { return (*nat)->commit(); },
                                   [&] { return (*before)->restore(); }});
}

Status cleanup_family(Xtables& xtables, IpFamily family) {
    auto lock = xtables.lock();
    if (!lock) return lock.error();
    if (Status s = cleanup_table(xtables, family, "nat"); !s) return s;
    return cleanup_table(xtables, family, "filter");
}

Result<std::vector<std::string>> list_own_chains(Xtables& xtables, IpFamily family,
                                                 const std::string& table) {
    auto copy = xtables.open(family, table);
    if (!copy) return copy.error();
    std::vector<std::string> out;
    for (const std::string& c : (*copy)->chains(false)) {
        if (own(c)) out.push_back(c);
    }
    return out;
}

}  // namespace sb::rules::iptables
