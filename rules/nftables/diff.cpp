#include "rules/nftables/diff.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace sb::rules::nftables {

bool Delta::empty() const {
    return flush_chains.empty() && flush_sets.empty() && del_elements.empty() &&
           del_chains.empty() && del_sets.empty() && add_sets.empty() && add_chains.empty() &&
           fill_chains.empty() && fill_sets.empty() && add_elements.empty();
}

size_t Delta::objects(const Model& desired) const {
    size_t n = flush_chains.size() + flush_sets.size() + del_elements.size() + del_chains.size() +
               del_sets.size() + add_sets.size() + add_chains.size() + add_elements.size();
    for (const std::string& name : fill_chains) {
        auto it = desired.chains.find(name);
        if (it != desired.chains.end()) n += it->second.rules.size();
    }
    for (const std::string& name : fill_sets) {
        auto it = desired.sets.find(name);
        if (it != desired.sets.end()) n += it->second.elements.size();
    }
    return n;
}

namespace {

// Compares one chain's before/after state and records what the batch needs.
void diff_chain(const std::string& name, const Chain* before, const Chain* after, bool rules_known,
                Delta& d) {
    if (before && !after) {
        d.flush_chains.push_back(name);
        d.del_chains.push_back(name);
        return;
    }
    if (!before && after) {
        d.add_chains.push_back(name);
        if (!after->rules.empty()) d.fill_chains.push_back(name);
        return;
    }
    if (!before || !after) return;
    if (before->hook != after->hook) {
        // A base chain's hook cannot be changed in place.
        d.flush_chains.push_back(name);
        d.del_chains.push_back(name);
        d.add_chains.push_back(name);
        d.fill_chains.push_back(name);
        return;
    }
    if (!rules_known || before->rules != after->rules) {
        d.flush_chains.push_back(name);
        if (!after->rules.empty()) d.fill_chains.push_back(name);
    }
}

void diff_element(const std::string& set, const ElementKey& key, const Verdict* before,
                  const Verdict* after, Delta& d) {
    if (before && after && *before == *after) return;
    if (before) d.del_elements.emplace_back(set, key);
    if (after) d.add_elements.emplace_back(set, key);
}

}  // namespace

Delta diff(const Model& old, const Model& desired, bool old_contents_known) {
    Delta d;
    std::set<std::string> chain_names;
    for (const auto& [name, _] : old.chains) chain_names.insert(name);
    for (const auto& [name, _] : desired.chains) chain_names.insert(name);
    for (const std::string& name : chain_names) {
        auto b = old.chains.find(name);
        auto a = desired.chains.find(name);
        diff_chain(name, b == old.chains.end() ? nullptr : &b->second,
                   a == desired.chains.end() ? nullptr : &a->second, old_contents_known, d);
    }
    for (const auto& [name, set] : old.sets) {
        auto a = desired.sets.find(name);
        if (a == desired.sets.end() || !a->second.same_type(set)) d.del_sets.push_back(name);
    }
    for (const auto& [name, set] : desired.sets) {
        auto b = old.sets.find(name);
        const bool recreated = b == old.sets.end() || !b->second.same_type(set);
        if (recreated) d.add_sets.push_back(name);
        if (set.dynamic()) continue;
        if (recreated || !old_contents_known) {
            if (!recreated) d.flush_sets.push_back(name);
            if (!set.elements.empty()) d.fill_sets.push_back(name);
            continue;
        }
        const auto& before = b->second.elements;
        for (const auto& [key, value] : before) {
            auto it = set.elements.find(key);
            diff_element(name, key, &value, it == set.elements.end() ? nullptr : &it->second, d);
        }
        for (const auto& [key, value] : set.elements) {
            if (!before.count(key)) d.add_elements.emplace_back(name, key);
        }
    }
    return d;
}

Delta update_model(Model& model, const std::vector<FragmentChange>& changes) {
    // Snapshot everything the changes touch, apply them, compare.
    std::map<std::string, std::optional<Chain>> chains_before;
    std::map<ElementId, std::optional<Verdict>> elements_before;
    auto snapshot = [&](const Fragment* f) {
        if (!f) return;
        for (const Chain& c : f->chains) {
            if (chains_before.count(c.name)) continue;
            auto it = model.chains.find(c.name);
            chains_before[c.name] =
                it == model.chains.end() ? std::nullopt : std::optional<Chain>(it->second);
        }
        for (const ElementRef& e : f->elements) {
            ElementId id{e.set, e.key};
            if (elements_before.count(id)) continue;
            std::optional<Verdict> value;
            auto s = model.sets.find(e.set);
            if (s != model.sets.end()) {
                auto it = s->second.elements.find(e.key);
                if (it != s->second.elements.end()) value = it->second;
            }
            elements_before[id] = value;
        }
    };
    for (const auto& [old_fragment, new_fragment] : changes) {
        snapshot(old_fragment);
        snapshot(new_fragment);
    }
    for (const auto& [old_fragment, new_fragment] : changes) {
        if (old_fragment) remove_fragment(model, *old_fragment);
    }
    for (const auto& [old_fragment, new_fragment] : changes) {
        if (new_fragment) add_fragment(model, *new_fragment);
    }
    Delta d;
    for (const auto& [name, before] : chains_before) {
        auto it = model.chains.find(name);
        diff_chain(name, before ? &*before : nullptr,
                   it == model.chains.end() ? nullptr : &it->second, true, d);
    }
    for (const auto& [id, before] : elements_before) {
        const Verdict* after = nullptr;
        auto s = model.sets.find(id.first);
        if (s != model.sets.end()) {
            auto it = s->second.elements.find(id.second);
            if (it != s->second.elements.end()) after = &it->second;
        }
        diff_element(id.first, id.second, before ? &*before : nullptr, after, d);
    }
    return d;
}

std::string to_nft_text(const Delta& d, const Model& desired) {
    const std::string table = "inet " + desired.table;
    std::string out = "add table " + table + "\n";
    auto elements = [&](const char* verb, const std::vector<ElementId>& ids) {
        for (const auto& [set_name, key] : ids) {
            auto it = desired.sets.find(set_name);
            if (it == desired.sets.end()) continue;
            Verdict v;
            if (auto e = it->second.elements.find(key); e != it->second.elements.end()) {
                v = e->second;
            }
            std::string text = element_text(it->second, key, v);
            if (std::string_view(verb) == "delete") text = text.substr(0, text.find(" : "));
            out += fmt::format("{} element {} {} {{ {} }}\n", verb, table, set_name, text);
        }
    };
    for (const auto& c : d.flush_chains) out += fmt::format("flush chain {} {}\n", table, c);
    for (const auto& s : d.flush_sets) out += fmt::format("flush set {} {}\n", table, s);
    elements("delete", d.del_elements);
    for (const auto& c : d.del_chains) out += fmt::format("delete chain {} {}\n", table, c);
    for (const auto& s : d.del_sets) out += fmt::format("delete set {} {}\n", table, s);
    for (const auto& s : d.add_sets) {
        auto it = desired.sets.find(s);
        if (it == desired.sets.end()) continue;
        out +=
            fmt::format("add {} {} {} {{ {} }}\n", is_plain_set(it->second.layout) ? "set" : "map",
                        table, s, set_type_text(it->second));
    }
    for (const auto& c : d.add_chains) {
        auto it = desired.chains.find(c);
        if (it == desired.chains.end()) continue;
        const auto& hook = it->second.hook;
        if (hook) {
            out +=
                fmt::format("add chain {} {} {{ type {} hook {} priority {}; policy accept; }}\n",
                            table, c, hook->type, hook->hook, hook->priority);
        } else {
            out += fmt::format("add chain {} {}\n", table, c);
        }
    }
    for (const auto& c : d.fill_chains) {
        auto it = desired.chains.find(c);
        if (it == desired.chains.end()) continue;
        for (const Rule& r : it->second.rules) {
            out += fmt::format("add rule {} {} {}\n", table, c, to_nft_text(r));
        }
    }
    for (const std::string& s : d.fill_sets) {
        auto it = desired.sets.find(s);
        if (it == desired.sets.end()) continue;
        for (const auto& [key, value] : it->second.elements) {
            out += fmt::format("add element {} {} {{ {} }}\n", table, s,
                               element_text(it->second, key, value));
        }
    }
    elements("add", d.add_elements);
    return out;
}

}  // namespace sb::rules::nftables
