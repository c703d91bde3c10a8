#include "tests/unit/rules/iptables/fake_xtables.h"

#include <cerrno>

#include <fmt/format.h>

namespace sb::rules::iptables::testing {

namespace {

std::vector<std::string> builtin_chains(const std::string& table) {
    if (table == "nat") return {"PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"};
    if (table == "filter") return {"INPUT", "FORWARD", "OUTPUT"};
    return {"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"};  // mangle
}

bool own(const std::string& chain) {
    return chain.rfind(kChainPrefix, 0) == 0;
}

// The name libiptc's get_target gives a rule's target.
std::string target_name(const Target& t) {
    switch (t.kind) {
        case TargetKind::kJump:
            return t.chain;
        case TargetKind::kAccept:
            return "ACCEPT";
        case TargetKind::kDrop:
            return "DROP";
        case TargetKind::kReturn:
            return "RETURN";
        case TargetKind::kDnat:
            return "DNAT";
        case TargetKind::kMarkOr:
        case TargetKind::kMarkXor:
            return "MARK";
        case TargetKind::kMasquerade:
            return "MASQUERADE";
        case TargetKind::kRejectTcpReset:
        case TargetKind::kRejectPortUnreachable:
            return "REJECT";
    }
    return {};
}

Error failure(IpFamily family, const std::string& table, const std::string& what, int err) {
    return make_error(ErrorCode::kIo,
                      fmt::format("{} {} table: {}",
                                  family == IpFamily::kV4 ? "iptables" : "ip6tables", table, what),
                      err);
}

}  // namespace

class FakeTableCopy final : public TableCopy {
  public:
    FakeTableCopy(FakeXtablesKernel& kernel, FakeXtablesKernel::Key key)
        : kernel_(kernel), key_(std::move(key)) {
        const FakeXtablesKernel::Stored& stored = kernel_.tables_.at(key_);
        copy_ = stored.table;
        generation_ = stored.generation;
    }

    std::vector<std::string> chains(bool builtin) const override {
        std::vector<std::string> out;
        for (const auto& [name, chain] : copy_.chains) {
            if (chain.builtin == builtin) out.push_back(name);
        }
        return out;
    }

    std::vector<std::string> rule_targets(const std::string& chain) const override {
        std::vector<std::string> out;
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end()) return out;
        for (const Rule& rule : it->second.rules) out.push_back(target_name(rule.target));
        return out;
    }

    std::vector<DestinationMatch> destination_matches(const std::string& chain) const override {
        std::vector<DestinationMatch> out;
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end()) return out;
        for (const Rule& rule : it->second.rules) {
            out.push_back({rule.destination, rule.destination_negate, rule.proto, rule.dport,
                           target_name(rule.target)});
        }
        return out;
    }

    Status create_chain(const std::string& chain) override {
        if (copy_.chains.count(chain)) return fail("create chain " + chain, EEXIST);
        copy_.chains[chain] = FakeChain{};
        return {};
    }

    Status flush_chain(const std::string& chain) override {
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end()) return fail("flush " + chain, ENOENT);
        it->second.rules.clear();
        return {};
    }

    Status delete_chain(const std::string& chain) override {
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end()) return fail("delete chain " + chain, ENOENT);
        if (it->second.builtin) return fail("delete chain " + chain, EINVAL);
        if (!it->second.rules.empty()) return fail("delete chain " + chain, ENOTEMPTY);
        for (const auto& [name, other] : copy_.chains) {
            for (const Rule& rule : other.rules) {
                if (rule.target.kind == TargetKind::kJump && rule.target.chain == chain) {
                    return fail("delete chain " + chain, EMLINK);
                }
            }
        }
        copy_.chains.erase(it);
        return {};
    }

    Status delete_rule(const std::string& chain, size_t index) override {
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end() || index >= it->second.rules.size()) {
            return fail("delete rule in " + chain, ENOENT);
        }
        it->second.rules.erase(it->second.rules.begin() + static_cast<std::ptrdiff_t>(index));
        return {};
    }

    Status append_rule(const std::string& chain, const Rule& rule) override {
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end()) return fail("append to " + chain, ENOENT);
        it->second.rules.push_back(rule);
        return {};
    }

    Status insert_rule(const std::string& chain, const Rule& rule, size_t index) override {
        auto it = copy_.chains.find(chain);
        if (it == copy_.chains.end() || index > it->second.rules.size()) {
            return fail("insert into " + chain, ENOENT);
        }
        it->second.rules.insert(it->second.rules.begin() + static_cast<std::ptrdiff_t>(index),
                                rule);
        return {};
    }

    Status commit() override {
        if (!kernel_.locked_) return fail("commit without the xtables lock", EPERM);
        FakeXtablesKernel::Stored& stored = kernel_.tables_.at(key_);
        if (stored.generation != generation_) return fail("commit", EAGAIN);  // stale copy
        if (size_t& failures = kernel_.commit_failures_[key_]; failures > 0) {
            --failures;
            return fail("commit (scripted refusal)", EINVAL);
        }
        for (const auto& [name, chain] : copy_.chains) {
            for (const Rule& rule : chain.rules) {
                if (rule.target.kind == TargetKind::kJump &&
                    !copy_.chains.count(rule.target.chain)) {
                    return fail("commit: " + name + " jumps to missing " + rule.target.chain,
                                ENOENT);
                }
                const bool nat_only = rule.target.kind == TargetKind::kDnat ||
                                      rule.target.kind == TargetKind::kMasquerade;
                if (nat_only && key_.second != "nat") {
                    return fail("commit: " + name + " has a nat target", EINVAL);
                }
            }
        }
        stored.table = copy_;
        generation_ = ++stored.generation;
        ++stored.commits;
        return {};
    }

  private:
    Error fail(const std::string& what, int err) const {
        return failure(key_.first, key_.second, what, err);
    }

    FakeXtablesKernel& kernel_;
    FakeXtablesKernel::Key key_;
    FakeTable copy_;
    size_t generation_ = 0;
};

class FakeBackup final : public TableBackup {
  public:
    FakeBackup(FakeXtablesKernel& kernel, FakeXtablesKernel::Key key)
        : kernel_(kernel), key_(std::move(key)), saved_(kernel_.tables_.at(key_).table) {}

    Status restore() const override {
        if (!kernel_.locked_) {
            return failure(key_.first, key_.second, "restore without the xtables lock", EPERM);
        }
        if (kernel_.restore_failures_ > 0) {
            --kernel_.restore_failures_;
            return failure(key_.first, key_.second, "restore (scripted refusal)", EINVAL);
        }
        FakeXtablesKernel::Stored& stored = kernel_.tables_.at(key_);
        stored.table = saved_;
        ++stored.generation;
        ++kernel_.restores_;
        return {};
    }

  private:
    FakeXtablesKernel& kernel_;
    FakeXtablesKernel::Key key_;
    FakeTable saved_;
};

class FakeLockHold final : public XtablesLockHold {
  public:
    explicit FakeLockHold(bool& locked) : locked_(locked) { locked_ = true; }
    ~FakeLockHold() override { locked_ = false; }
    FakeLockHold(const FakeLockHold&) = delete;
    FakeLockHold& operator=(const FakeLockHold&) = delete;

  private:
    bool& locked_;
};

class FakeXtables final : public Xtables {
  public:
    explicit FakeXtables(FakeXtablesKernel& kernel) : kernel_(kernel) {}

    Result<std::unique_ptr<XtablesLockHold>> lock() override {
        // A second flock on another descriptor fails in one process too.
        if (kernel_.locked_) return make_error(ErrorCode::kIo, "xtables lock is busy");
        return std::unique_ptr<XtablesLockHold>(std::make_unique<FakeLockHold>(kernel_.locked_));
    }

    Result<bool> has_table(IpFamily family, const std::string& table) override {
        if (auto refused = kernel_.table_list_errors_.find(family);
            refused != kernel_.table_list_errors_.end()) {
            return make_error(ErrorCode::kIo, "read the list of tables", refused->second);
        }
        return kernel_.tables_.count({family, table}) > 0;
    }

    Result<std::unique_ptr<TableCopy>> open(IpFamily family, const std::string& table) override {
        if (kernel_.missing_.count(family)) {
            return failure(family, table, "init: no x_tables for this family", ENOENT);
        }
        kernel_.instantiate({family, table});
        return std::unique_ptr<TableCopy>(
            std::make_unique<FakeTableCopy>(kernel_, FakeXtablesKernel::Key{family, table}));
    }

    Result<std::unique_ptr<TableBackup>> back_up(IpFamily family,
                                                 const std::string& table) override {
        if (!kernel_.locked_) return failure(family, table, "back up without the lock", EPERM);
        kernel_.instantiate({family, table});
        return std::unique_ptr<TableBackup>(
            std::make_unique<FakeBackup>(kernel_, FakeXtablesKernel::Key{family, table}));
    }

  private:
    FakeXtablesKernel& kernel_;
};

std::unique_ptr<Xtables> FakeXtablesKernel::xtables() {
    return std::make_unique<FakeXtables>(*this);
}

FakeXtablesKernel::Stored& FakeXtablesKernel::instantiate(const Key& key) {
    auto [it, added] = tables_.try_emplace(key);
    if (added) {
        for (const std::string& name : builtin_chains(key.second)) {
            it->second.table.chains[name].builtin = true;
        }
    }
    return it->second;
}

const FakeTable* FakeXtablesKernel::table(IpFamily family, const std::string& name) const {
    auto it = tables_.find({family, name});
    return it == tables_.end() ? nullptr : &it->second.table;
}

FakeTable& FakeXtablesKernel::edit(IpFamily family, const std::string& name) {
    Stored& stored = instantiate({family, name});
    ++stored.generation;
    return stored.table;
}

std::map<std::string, FakeChain> FakeXtablesKernel::own_chains(IpFamily family,
                                                               const std::string& name) const {
    std::map<std::string, FakeChain> out;
    if (const FakeTable* t = table(family, name)) {
        for (const auto& [chain, contents] : t->chains) {
            if (own(chain)) out.emplace(chain, contents);
        }
    }
    return out;
}

std::vector<std::string> FakeXtablesKernel::targets(IpFamily family, const std::string& table,
                                                    const std::string& chain) const {
    std::vector<std::string> out;
    const FakeTable* t = this->table(family, table);
    if (!t) return out;
    auto it = t->chains.find(chain);
    if (it == t->chains.end()) return out;
    for (const Rule& rule : it->second.rules) out.push_back(target_name(rule.target));
    return out;
}

void FakeXtablesKernel::fail_commits(IpFamily family, const std::string& table, size_t count) {
    commit_failures_[{family, table}] = count;
}

size_t FakeXtablesKernel::commits(IpFamily family, const std::string& table) const {
    auto it = tables_.find({family, table});
    return it == tables_.end() ? 0 : it->second.commits;
}

}  // namespace sb::rules::iptables::testing
