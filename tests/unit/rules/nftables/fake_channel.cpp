#include "tests/unit/rules/nftables/fake_channel.h"

#include <errno.h>

#include <fmt/format.h>
#include <memory>
#include <utility>

namespace sb::rules::nftables::testing {

namespace {

Error refused(const std::string& what, int err) {
    return make_error(ErrorCode::kKernel, "fake nftables: " + what, err);
}

// The set an expression reads or writes, if any (kIifname's name is an
// interface).
const std::string* set_of(const Expr& e) {
    switch (e.kind) {
        case ExprKind::kVmapDaddrProtoPort:
        case ExprKind::kVmapProtoPort:
        case ExprKind::kSetSaddrDaddr:
        case ExprKind::kSetDaddr:
        case ExprKind::kAffinityUpdate:
        case ExprKind::kAffinityDnat:
        case ExprKind::kDnatByAddress:
        case ExprKind::kDnatByPort:
            return &e.name;
        default:
            return nullptr;
    }
}

bool jumps(const Verdict& v) {
    return v.kind == VerdictKind::kJump || v.kind == VerdictKind::kGoto;
}

// Whether anything in `t` refers to chain `name` (a rule's jump or goto, a
// verdict map's element).
bool chain_referenced(const Model& t, const std::string& name) {
    for (const auto& [_, chain] : t.chains) {
        for (const Rule& rule : chain.rules) {
            for (const Expr& e : rule) {
                if (e.kind == ExprKind::kVerdict && jumps(e.verdict) && e.verdict.chain == name) {
                    return true;
                }
            }
        }
    }
    for (const auto& [_, set] : t.sets) {
        for (const auto& [key, value] : set.elements) {
            if (jumps(value) && value.chain == name) return true;
        }
    }
    return false;
}

bool set_referenced(const Model& t, const std::string& name) {
    for (const auto& [_, chain] : t.chains) {
        for (const Rule& rule : chain.rules) {
            for (const Expr& e : rule) {
                if (const std::string* s = set_of(e); s && *s == name) return true;
            }
        }
    }
    return false;
}

// A rule may only name chains and sets that exist.
Status check_references(const Model& t, const std::string& chain, const Rule& rule) {
    for (const Expr& e : rule) {
        if (e.kind == ExprKind::kVerdict && jumps(e.verdict) && !t.chains.count(e.verdict.chain)) {
            return refused("rule of " + chain + " jumps to missing chain " + e.verdict.chain,
                           ENOENT);
        }
        if (const std::string* s = set_of(e); s && !t.sets.count(*s)) {
            return refused("rule of " + chain + " uses missing set " + *s, ENOENT);
        }
    }
    return {};
}

// The Delta's steps in order on `t`, as the kernel checks them.
Status apply_to(Model& t, const Delta& d, const Model& desired) {
    for (const std::string& c : d.flush_chains) {
        auto it = t.chains.find(c);
        if (it == t.chains.end()) return refused("flush of missing chain " + c, ENOENT);
        it->second.rules.clear();
    }
    for (const std::string& s : d.flush_sets) {
        auto it = t.sets.find(s);
        if (it == t.sets.end()) return refused("flush of missing set " + s, ENOENT);
        it->second.elements.clear();
    }
    for (const auto& [s, key] : d.del_elements) {
        auto it = t.sets.find(s);
        if (it == t.sets.end()) return refused("element delete in missing set " + s, ENOENT);
        if (it->second.elements.erase(key) == 0) {
            return refused("delete of a missing element of " + s, ENOENT);
        }
    }
    for (const std::string& c : d.del_chains) {
        auto it = t.chains.find(c);
        if (it == t.chains.end()) return refused("delete of missing chain " + c, ENOENT);
        if (!it->second.rules.empty() || chain_referenced(t, c)) {
            return refused("delete of chain " + c + " in use", EBUSY);
        }
        t.chains.erase(it);
    }
    for (const std::string& s : d.del_sets) {
        auto it = t.sets.find(s);
        if (it == t.sets.end()) return refused("delete of missing set " + s, ENOENT);
        if (set_referenced(t, s)) return refused("delete of set " + s + " in use", EBUSY);
        t.sets.erase(it);
    }
    for (const std::string& s : d.add_sets) {
        auto want = desired.sets.find(s);
        if (want == desired.sets.end()) continue;  // the writer skips it too
        auto it = t.sets.find(s);
        if (it != t.sets.end()) {
            if (!it->second.same_type(want->second)) {
                return refused("set " + s + " exists with another type", EEXIST);
            }
            continue;
        }
        Set& set = t.sets[s];
        set.name = s;
        set.layout = want->second.layout;
        set.family = want->second.family;
    }
    for (const std::string& c : d.add_chains) {
        auto want = desired.chains.find(c);
        if (want == desired.chains.end()) continue;
        auto it = t.chains.find(c);
        if (it != t.chains.end()) {
            if (it->second.hook != want->second.hook) {
                return refused("chain " + c + " exists with another hook", EEXIST);
            }
            continue;
        }
        Chain& chain = t.chains[c];
        chain.name = c;
        chain.hook = want->second.hook;
    }
    for (const std::string& c : d.fill_chains) {
        auto want = desired.chains.find(c);
        if (want == desired.chains.end()) continue;
        auto it = t.chains.find(c);
        if (it == t.chains.end()) return refused("rules for missing chain " + c, ENOENT);
        for (const Rule& rule : want->second.rules) {
            if (Status s = check_references(t, c, rule); !s) return s;
            it->second.rules.push_back(rule);
        }
    }
    auto add_element = [&](const std::string& s, const ElementKey& key) -> Status {
        auto it = t.sets.find(s);
        if (it == t.sets.end()) return refused("element for missing set " + s, ENOENT);
        Verdict value;
        if (auto want = desired.sets.find(s); want != desired.sets.end()) {
            if (auto v = want->second.elements.find(key); v != want->second.elements.end()) {
                value = v->second;
            }
        }
        if (jumps(value) && !t.chains.count(value.chain)) {
            return refused("element of " + s + " jumps to missing chain " + value.chain, ENOENT);
        }
        auto [at, added] = it->second.elements.emplace(key, value);
        if (!added && !(at->second == value)) {
            return refused("element of " + s + " exists with another value", EBUSY);
        }
        return {};
    };
    for (const std::string& s : d.fill_sets) {
        auto want = desired.sets.find(s);
        if (want == desired.sets.end()) continue;  // the writer skips it too
        for (const auto& [key, _] : want->second.elements) {
            if (Status st = add_element(s, key); !st) return st;
        }
    }
    for (const auto& [s, key] : d.add_elements) {
        if (Status st = add_element(s, key); !st) return st;
    }
    return {};
}

class FakeChannel final : public Channel {
  public:
    FakeChannel(FakeKernel& kernel, std::string table)
        : kernel_(kernel), table_(std::move(table)) {}

    Result<std::optional<Model>> read_table() override {
        const Model* t = kernel_.table(table_);
        if (!t) return std::optional<Model>();
        // As the netlink reader: names, hooks and types; no rules, no elements.
        Model out;
        out.table = table_;
        for (const auto& [name, chain] : t->chains) {
            Chain& c = out.chains[name];
            c.name = name;
            c.hook = chain.hook;
        }
        for (const auto& [name, set] : t->sets) {
            Set& s = out.sets[name];
            s.name = name;
            s.layout = set.layout;
            s.family = set.family;
            s.unknown = set.unknown;
        }
        return std::optional<Model>(std::move(out));
    }

    Status apply(const Delta& delta, const Model& desired) override {
        if (kernel_.fail_next_batch) {
            const int err = *kernel_.fail_next_batch;
            kernel_.fail_next_batch.reset();
            return refused("batch refused as the test asked", err);
        }
        // The batch writes the desired model's table (rules/nftables/netlink_batch.h).
        Model t = kernel_.table(desired.table) ? *kernel_.table(desired.table) : Model{};
        t.table = desired.table;
        if (Status s = apply_to(t, delta, desired); !s) return s;
        if (!kernel_.table(desired.table) || !kernel_.handles.count(desired.table)) {
            kernel_.handles[desired.table] = kernel_.next_handle++;
        }
        kernel_.tables[desired.table] = std::move(t);
        return {};
    }

    Result<std::optional<uint64_t>> table_handle() override {
        if (!kernel_.table(table_)) return std::optional<uint64_t>();
        auto it = kernel_.handles.find(table_);
        // A table a test put in place by hand gets its handle when first read.
        if (it == kernel_.handles.end()) {
            it = kernel_.handles.emplace(table_, kernel_.next_handle++).first;
        }
        return std::optional<uint64_t>(it->second);
    }

    Result<size_t> rule_count(const std::string& chain) override {
        const Model* t = kernel_.table(table_);
        auto it = t ? t->chains.find(chain) : std::map<std::string, Chain>::const_iterator{};
        if (!t || it == t->chains.end()) {
            return make_error(ErrorCode::kNotFound, "fake nftables: not found");
        }
        return it->second.rules.size();
    }

    Result<ElementMap> dump_elements(const Set& set) override {
        const Model* t = kernel_.table(table_);
        auto it = t ? t->sets.find(set.name) : std::map<std::string, Set>::const_iterator{};
        if (!t || it == t->sets.end()) {
            return make_error(ErrorCode::kNotFound, "fake nftables: not found");
        }
        return it->second.elements;
    }

    Status delete_table() override {
        kernel_.tables.erase(table_);
        kernel_.handles.erase(table_);
        return {};
    }

    size_t stale_answers() const override { return kernel_.stale_answers; }

  private:
    FakeKernel& kernel_;
    std::string table_;
};

}  // namespace

Model* FakeKernel::table(const std::string& name) {
    auto it = tables.find(name);
    return it == tables.end() ? nullptr : &it->second;
}

ChannelOpener FakeKernel::opener(std::string table) {
    return [this, table]() -> Result<std::unique_ptr<Channel>> {
        return std::unique_ptr<Channel>(std::make_unique<FakeChannel>(*this, table));
    };
}

std::string kernel_text(const Model& table) {
    Model statics;
    std::string dynamic;
    for (const auto& [name, chain] : table.chains) statics.chains[name] = chain;
    for (const auto& [name, set] : table.sets) {
        Set& s = statics.sets[name];
        s.name = set.name;
        s.layout = set.layout;
        s.family = set.family;
        if (set.unknown) dynamic += fmt::format("{}: of a foreign type\n", name);
        if (!set.dynamic()) {
            s.elements = set.elements;
            continue;
        }
        for (const auto& [key, value] : set.elements) {
            dynamic += fmt::format("{}: {} . {} . {} . {} : {} . {}\n", name, key.a.to_string(),
                                   key.b.to_string(), key.proto, key.port,
                                   value.address.to_string(), value.port);
        }
    }
    return to_nft_text(statics) + dynamic;
}

}  // namespace sb::rules::nftables::testing
