#include "tracer.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>

namespace sb::rules::nftables::testing {

std::string Outcome::describe() const {
    return sb::rules::testing::describe_outcome(*this);
}

struct Tracer::State {
    Packet pkt;
    uint32_t mark = 0;
    bool dnat_done = false;
    const std::vector<uint32_t>* decisions = nullptr;
    size_t next_decision = 0;
    std::vector<uint32_t>* moduli = nullptr;
    Outcome out;
};

namespace {

enum class Flow { kNext, kContinue, kAccept, kDrop, kReject, kReturn, kJump, kGoto };

struct Step {
    Flow flow = Flow::kNext;
    std::string chain;
};

Step from_verdict(const Verdict& v) {
    switch (v.kind) {
        case VerdictKind::kAccept:
            return {Flow::kAccept, {}};
        case VerdictKind::kDrop:
            return {Flow::kDrop, {}};
        case VerdictKind::kReturn:
            return {Flow::kReturn, {}};
        case VerdictKind::kJump:
            return {Flow::kJump, v.chain};
        case VerdictKind::kGoto:
            return {Flow::kGoto, v.chain};
        case VerdictKind::kNone:
            break;
    }
    return {Flow::kContinue, {}};
}

// The value of the next `numgen random mod modulus` on this path.
uint32_t next_random(Tracer::State& st, uint32_t modulus);

bool address_matches(const Expr& e, const IpAddress& a) {
    if (a.family() != e.family) return false;
    return e.prefix.contains(a) != e.negate;
}

}  // namespace

namespace {
uint32_t next_random(Tracer::State& st, uint32_t modulus) {
    st.moduli->push_back(modulus);
    const size_t i = st.next_decision++;
    return i < st.decisions->size() ? (*st.decisions)[i] : 0;
}
}  // namespace

Tracer::Tracer(const Model& model, std::vector<IpAddress> local_addresses)
    : model_(model), local_(std::move(local_addresses)) {}

bool Tracer::is_local(const IpAddress& address) const {
    if (address.is_loopback()) return true;
    return std::find(local_.begin(), local_.end(), address) != local_.end();
}

void Tracer::remember(const Outcome& outcome) {
    for (const auto& [key, target] : outcome.affinity_updates) affinity_[key] = target;
}

// Evaluates one chain like nf_tables: rules in order, a rule stops at its
// first non-matching term, verdicts jump/goto/return, nat statements end the
// hook with accept.
static Flow eval_chain(const Model& model, const std::string& name, Tracer::State& s,
                       const std::function<Step(const Rule&, Tracer::State&)>& eval_rule,
                       int depth) {
    if (depth > 32) throw std::runtime_error("chain depth exceeded at " + name);
    auto it = model.chains.find(name);
    if (it == model.chains.end()) throw std::runtime_error("jump to missing chain " + name);
    s.out.chains.push_back(name);
    for (const Rule& rule : it->second.rules) {
        Step step = eval_rule(rule, s);
        switch (step.flow) {
            case Flow::kNext:
            case Flow::kContinue:
                continue;
            case Flow::kReturn:
                return Flow::kContinue;
            case Flow::kAccept:
            case Flow::kDrop:
            case Flow::kReject:
                return step.flow;
            case Flow::kJump: {
                const Flow f = eval_chain(model, step.chain, s, eval_rule, depth + 1);
                if (f == Flow::kContinue) continue;
                return f;
            }
            case Flow::kGoto:
                return eval_chain(model, step.chain, s, eval_rule, depth + 1);
        }
    }
    return Flow::kContinue;
}

bool Tracer::run_hook(const std::string& hook, State& s, bool with_nat) const {
    std::vector<const Chain*> chains;
    for (const auto& [name, chain] : model_.chains) {
        if (!chain.hook || chain.hook->hook != hook) continue;
        if (with_nat || chain.hook->type != "nat") chains.push_back(&chain);
    }
    std::stable_sort(chains.begin(), chains.end(), [](const Chain* a, const Chain* b) {
        return a->hook->priority < b->hook->priority;
    });
    // Sorted by priority, so a raw chain's notrack is decided before the nat
    // chains come up: the kernel runs no nat hook for an untracked packet.
    const auto skip = [&](const Chain* chain) {
        return s.out.untracked && chain->hook->type == "nat";
    };
    auto eval_rule = [this](const Rule& rule, State& st) -> Step {
        Packet& p = st.pkt;
        for (const Expr& e : rule) {
            switch (e.kind) {
                case ExprKind::kNfproto:
                    if (p.dst.family() != e.family) return {};
                    break;
                case ExprKind::kL4proto:
                    if (p.proto != e.proto) return {};
                    break;
                case ExprKind::kCtStateNew:
                    // The tracer follows first packets, new unless untracked.
                    if (st.out.untracked) return {};
                    break;
                case ExprKind::kCtStatusDnat:
                    if (!st.dnat_done) return {};
                    break;
                case ExprKind::kThDport:
                    if (p.dport != e.port) return {};
                    break;
                case ExprKind::kThSport:
                    if (p.sport != e.port) return {};
                    break;
                case ExprKind::kNotrack:
                    st.out.untracked = true;
                    break;
                case ExprKind::kSaddr:
                    if (!address_matches(e, p.src)) return {};
                    break;
                case ExprKind::kDaddr:
                    if (!address_matches(e, p.dst)) return {};
                    break;
                case ExprKind::kFibDaddrLocal:
                    if (!is_local(p.dst)) return {};
                    break;
                case ExprKind::kFibSaddrLocal:
                    if (!is_local(p.src)) return {};
                    break;
                case ExprKind::kIifname:
                    if (p.iif != e.name) return {};
                    break;
                case ExprKind::kIifnamePrefix:
                    if (p.iif.rfind(e.name, 0) != 0) return {};
                    break;
                case ExprKind::kMarkSetOr:
                    st.mark |= e.value;
                    break;
                case ExprKind::kMarkSetXor:
                    st.mark ^= e.value;
                    break;
                case ExprKind::kMarkUnset:
                    if ((st.mark & e.value) != 0) return {};
                    break;
                case ExprKind::kNumgen:
                    if (next_random(st, e.value) != 0) return {};
                    break;
                case ExprKind::kDnatByAddress:
                case ExprKind::kDnatByPort: {
                    const uint32_t slot = next_random(st, e.value);
                    auto set = model_.sets.find(e.name);
                    if (set == model_.sets.end()) throw std::runtime_error("missing map " + e.name);
                    ElementKey key{{}, {}, p.proto, p.dport, slot};
                    if (e.kind == ExprKind::kDnatByAddress) key.a = p.dst;
                    auto hit = set->second.elements.find(key);
                    if (hit == set->second.elements.end()) return {};  // the kernel breaks the rule
                    if (hit->second.address.family() != e.family) {
                        throw std::runtime_error("backend family mismatch in " + e.name);
                    }
                    st.out.dnat = Destination{hit->second.address, hit->second.port};
                    p.dst = hit->second.address;
                    p.dport = hit->second.port;
                    st.dnat_done = true;
                    return {Flow::kAccept, {}};
                }
                case ExprKind::kVmapDaddrProtoPort:
                case ExprKind::kVmapProtoPort: {
                    auto set = model_.sets.find(e.name);
                    if (set == model_.sets.end()) throw std::runtime_error("missing map " + e.name);
                    ElementKey key{{}, {}, p.proto, p.dport};
                    if (e.kind == ExprKind::kVmapDaddrProtoPort) {
                        if (p.dst.family() != e.family) return {};
                        key.a = p.dst;
                    }
                    auto hit = set->second.elements.find(key);
                    if (hit == set->second.elements.end()) return {};
                    return from_verdict(hit->second);
                }
                case ExprKind::kSetDaddr: {
                    auto set = model_.sets.find(e.name);
                    if (set == model_.sets.end()) throw std::runtime_error("missing set " + e.name);
                    if (p.dst.family() != e.family ||
                        !set->second.elements.count(ElementKey{p.dst, {}, 0, 0})) {
                        return {};
                    }
                    break;
                }
                case ExprKind::kSetSaddrDaddr: {
                    auto set = model_.sets.find(e.name);
                    if (set == model_.sets.end()) throw std::runtime_error("missing set " + e.name);
                    if (!set->second.elements.count(ElementKey{p.src, p.dst, 0, 0})) return {};
                    break;
                }
                case ExprKind::kAffinityUpdate:
                    st.out.affinity_updates.push_back({AffinityKey{p.src, p.dst, p.proto, p.dport},
                                                       Destination{e.prefix.address(), e.port}});
                    break;
                case ExprKind::kAffinityDnat: {
                    auto hit = affinity_.find(AffinityKey{p.src, p.dst, p.proto, p.dport});
                    if (hit == affinity_.end()) return {};
                    st.out.dnat = hit->second;
                    p.dst = hit->second.first;
                    p.dport = hit->second.second;
                    st.dnat_done = true;
                    return {Flow::kAccept, {}};
                }
                case ExprKind::kDnat:
                    if (e.family != p.dst.family())
                        throw std::runtime_error("dnat family mismatch");
                    st.out.dnat = Destination{e.prefix.address(), e.port};
                    p.dst = e.prefix.address();
                    p.dport = e.port;
                    st.dnat_done = true;
                    return {Flow::kAccept, {}};
                case ExprKind::kMasquerade:
                    st.out.masquerade = true;
                    return {Flow::kAccept, {}};
                case ExprKind::kRejectTcpReset:
                case ExprKind::kRejectPortUnreachable:
                    return {Flow::kReject, {}};
                case ExprKind::kVerdict:
                    return from_verdict(e.verdict);
            }
        }
        return {Flow::kContinue, {}};
    };
    for (const Chain* chain : chains) {
        if (skip(chain)) continue;
        const Flow f = eval_chain(model_, chain->name, s, eval_rule, 0);
        if (f == Flow::kDrop || f == Flow::kReject) {
            s.out.fate = f == Flow::kDrop ? Fate::kDrop : Fate::kReject;
            return false;
        }
    }
    return true;
}

Outcome Tracer::run(const Packet& packet, const std::vector<uint32_t>& decisions,
                    std::vector<uint32_t>& moduli) const {
    State s;
    s.pkt = packet;
    s.decisions = &decisions;
    s.moduli = &moduli;
    if (!packet.local_origin) {
        if (!run_hook("prerouting", s)) return s.out;  // filter -110, then nat -100
        if (is_local(s.pkt.dst)) {
            run_hook("input", s);
            return s.out;
        }
        if (!run_hook("forward", s)) return s.out;
        run_hook("postrouting", s);
        return s.out;
    }
    s.pkt.iif.clear();                         // no input interface: meta iifname reads ""
    if (!run_hook("output", s)) return s.out;  // filter -110, then nat -100
    run_hook("postrouting", s);
    if (is_local(s.pkt.dst)) {
        // Delivered over lo: the filter hooks run again (nat is already bound).
        s.pkt.iif = "lo";
        if (!run_hook("prerouting", s, false)) return s.out;
        run_hook("input", s, false);
    }
    return s.out;
}

std::vector<Outcome> Tracer::trace(const Packet& packet) const {
    std::vector<Outcome> out;
    std::deque<std::vector<uint32_t>> scripts{{}};
    int guard = 0;
    while (!scripts.empty()) {
        if (++guard > 100000) throw std::runtime_error("too many numgen paths");
        std::vector<uint32_t> script = scripts.front();
        scripts.pop_front();
        std::vector<uint32_t> moduli;
        Outcome o = run(packet, script, moduli);
        double p = 1.0;
        for (size_t i = 0; i < moduli.size(); ++i) {
            p /= moduli[i];
            if (i >= script.size()) {
                // This path took value 0 here; explore the others.
                for (uint32_t v = 1; v < moduli[i]; ++v) {
                    std::vector<uint32_t> branch(i, 0);
                    for (size_t k = 0; k < i && k < script.size(); ++k) branch[k] = script[k];
                    branch.push_back(v);
                    scripts.push_back(std::move(branch));
                }
            }
        }
        o.probability = p;
        sb::rules::testing::merge_outcome(out, std::move(o));
    }
    return out;
}

}  // namespace sb::rules::nftables::testing
