#include "tracer.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include <fmt/format.h>

namespace sb::rules::iptables::testing {

std::string Outcome::describe() const {
    return sb::rules::testing::describe_outcome(*this);
}

struct Tracer::State {
    Packet pkt;
    uint32_t mark = 0;
    const std::vector<bool>* decisions = nullptr;
    size_t next_decision = 0;
    std::vector<double>* probabilities = nullptr;
    Outcome out;
};

namespace {

// What evaluating a rule or chain yields.
enum Flow : int { kNoMatch, kContinue, kReturn, kAccept, kDrop, kReject };

bool address_matches(const std::optional<Prefix>& prefix, bool negate, const IpAddress& a) {
    if (!prefix) return true;
    if (prefix->family() != a.family()) throw std::runtime_error("rule of the wrong family");
    return prefix->contains(a) != negate;
}

}  // namespace

Tracer::Tracer(const FamilyModel& model, std::vector<IpAddress> local_addresses)
    : model_(model), local_(std::move(local_addresses)) {}

bool Tracer::is_local(const IpAddress& address) const {
    if (address.is_loopback()) return true;
    return std::find(local_.begin(), local_.end(), address) != local_.end();
}

void Tracer::remember(const Outcome& outcome) {
    for (const auto& [name, source] : outcome.recent_sets) recent_[name].insert(source);
}

int Tracer::eval_rule(const Table& table, const Rule& rule, State& s, int depth) const {
    Packet& p = s.pkt;
    if (!address_matches(rule.source, rule.source_negate, p.src)) return kNoMatch;
    if (!address_matches(rule.destination, rule.destination_negate, p.dst)) return kNoMatch;
    if (!rule.in_interface.empty()) {
        const std::string& name = rule.in_interface;
        const bool matched = name.back() == '+'
                                 ? p.iif.rfind(name.substr(0, name.size() - 1), 0) == 0
                                 : p.iif == name;
        if (!matched) return kNoMatch;
    }
    if (rule.proto != 0 && rule.proto != p.proto) return kNoMatch;
    if (rule.dport != 0) {
        if (rule.proto == 0) throw std::runtime_error("--dport without -p");
        if (rule.dport != p.dport) return kNoMatch;
    }
    if (rule.src_type_local && !is_local(p.src)) return kNoMatch;
    if (rule.dst_type_local && !is_local(p.dst)) return kNoMatch;
    if (rule.mark_match && (((s.mark & rule.mark_mask) == rule.mark_value) == rule.mark_invert)) {
        return kNoMatch;
    }
    if (rule.ctstate != 0) {
        // Every traced packet opens its connection (NEW); DNAT once a nat
        // rule rewrote its destination.
        const uint16_t state = kCtStateNew | (s.out.dnat ? kCtStateDnat : 0);
        if (((rule.ctstate & state) != 0) == rule.ctstate_negate) return kNoMatch;
    }
    if (rule.probability_denominator != 0) {
        const double probability = 1.0 / rule.probability_denominator;
        const size_t i = s.next_decision++;
        const bool hit = i < s.decisions->size() && (*s.decisions)[i];
        s.probabilities->push_back(hit ? probability : 1.0 - probability);
        if (!hit) return kNoMatch;
    }
    if (rule.recent == RecentKind::kCheck) {
        if (rule.recent_seconds == 0) throw std::runtime_error("--rcheck without --seconds");
        auto list = recent_.find(rule.recent_name);
        if (list == recent_.end() || !list->second.count(p.src)) return kNoMatch;
    } else if (rule.recent == RecentKind::kSet) {
        s.out.recent_sets.emplace_back(rule.recent_name, p.src);
    }
    const Target& t = rule.target;
    switch (t.kind) {
        case TargetKind::kJump: {
            const int flow = eval_chain(table, t.chain, s, depth + 1);
            return flow == kReturn ? kContinue : flow;
        }
        case TargetKind::kAccept:
            return kAccept;
        case TargetKind::kDrop:
            return kDrop;
        case TargetKind::kReturn:
            return kReturn;
        case TargetKind::kDnat:
            if (table.name != "nat") throw std::runtime_error("DNAT outside nat");
            if (t.address.family() != p.dst.family()) throw std::runtime_error("DNAT family");
            if (p.proto != rule.proto) throw std::runtime_error("DNAT with a port needs -p");
            s.out.dnat = Destination{t.address, t.port};
            p.dst = t.address;
            p.dport = t.port;
            return kAccept;
        case TargetKind::kMarkOr:
            s.mark |= t.mark;
            return kContinue;
        case TargetKind::kMarkXor:
            s.mark ^= t.mark;
            return kContinue;
        case TargetKind::kMasquerade:
            if (table.name != "nat") throw std::runtime_error("MASQUERADE outside nat");
            s.out.masquerade = true;
            return kAccept;
        case TargetKind::kRejectTcpReset:
            if (rule.proto != 6) throw std::runtime_error("tcp-reset without -p tcp");
            [[fallthrough]];
        case TargetKind::kRejectPortUnreachable:
            if (table.name != "filter") throw std::runtime_error("REJECT outside filter");
            return kReject;
    }
    return kContinue;
}

int Tracer::eval_chain(const Table& table, const std::string& name, State& s, int depth) const {
    if (depth > 32) throw std::runtime_error("chain depth exceeded at " + name);
    auto it = table.chains.find(name);
    if (it == table.chains.end()) throw std::runtime_error("jump to missing chain " + name);
    if (name.size() > kMaxChainName) throw std::runtime_error("chain name too long: " + name);
    s.out.chains.push_back(name);
    for (const Rule& rule : it->second.rules) {
        const int flow = eval_rule(table, rule, s, depth);
        if (flow == kNoMatch || flow == kContinue) continue;
        return flow;
    }
    return kReturn;
}

bool Tracer::run_builtin(const Table& table, const std::string& builtin, State& s) const {
    for (const HookRule& hook : table.hooks) {
        if (hook.builtin != builtin) continue;
        const int flow = eval_rule(table, hook.rule, s, 0);
        if (flow == kDrop || flow == kReject) {
            s.out.fate = flow == kDrop ? Fate::kDrop : Fate::kReject;
            return false;
        }
        if (flow == kAccept) return true;
    }
    return true;
}

Outcome Tracer::run(const Packet& packet, const std::vector<bool>& decisions,
                    std::vector<double>& probabilities) const {
    State s;
    s.pkt = packet;
    s.decisions = &decisions;
    s.probabilities = &probabilities;
    if (!packet.local_origin) {
        if (!run_builtin(model_.nat, "PREROUTING", s)) return s.out;
        if (is_local(s.pkt.dst)) {
            run_builtin(model_.filter, "INPUT", s);
            return s.out;
        }
        if (!run_builtin(model_.filter, "FORWARD", s)) return s.out;
        run_builtin(model_.nat, "POSTROUTING", s);
        return s.out;
    }
    s.pkt.iif.clear();  // no input interface: -i matches no name
    if (!run_builtin(model_.nat, "OUTPUT", s)) return s.out;
    if (!run_builtin(model_.filter, "OUTPUT", s)) return s.out;
    run_builtin(model_.nat, "POSTROUTING", s);
    // Delivered over lo: filter INPUT runs (nat is bound already).
    s.pkt.iif = "lo";
    if (is_local(s.pkt.dst)) run_builtin(model_.filter, "INPUT", s);
    return s.out;
}

std::vector<Outcome> Tracer::trace(const Packet& packet) const {
    if (packet.dst.family() != model_.family || packet.src.family() != model_.family) {
        throw std::runtime_error("packet family differs from the model's");
    }
    std::vector<Outcome> out;
    std::deque<std::vector<bool>> scripts{{}};
    int guard = 0;
    while (!scripts.empty()) {
        if (++guard > 100000) throw std::runtime_error("too many statistic paths");
        std::vector<bool> script = scripts.front();
        scripts.pop_front();
        std::vector<double> probabilities;
        Outcome o = run(packet, script, probabilities);
        double p = 1.0;
        for (size_t i = 0; i < probabilities.size(); ++i) {
            p *= probabilities[i];
            if (i >= script.size()) {
                // This path did not match here; explore the match.
                std::vector<bool> branch(script.begin(), script.end());
                branch.resize(i, false);
                branch.push_back(true);
                scripts.push_back(std::move(branch));
            }
        }
        o.probability = p;
        sb::rules::testing::merge_outcome(out, std::move(o));
    }
    return out;
}

}  // namespace sb::rules::iptables::testing
