#include "rules/iptables/model.h"

#include <netinet/in.h>

#include <cmath>

#include <fmt/format.h>

#include "rules/naming.h"

namespace sb::rules::iptables {

namespace {

std::string target_text(const Target& t, IpFamily family) {
    switch (t.kind) {
        case TargetKind::kJump:
            return "-j " + t.chain;
        case TargetKind::kAccept:
            return "-j ACCEPT";
        case TargetKind::kDrop:
            return "-j DROP";
        case TargetKind::kReturn:
            return "-j RETURN";
        case TargetKind::kDnat:
            return family == IpFamily::kV4 ? fmt::format("-j DNAT --to-destination {}:{}",
                                                         t.address.to_string(), t.port)
                                           : fmt::format("-j DNAT --to-destination [{}]:{}",
                                                         t.address.to_string(), t.port);
        case TargetKind::kMarkOr:
            return fmt::format("-j MARK --or-mark {:#x}", t.mark);
        case TargetKind::kMarkXor:
            return fmt::format("-j MARK --xor-mark {:#x}", t.mark);
        case TargetKind::kMasquerade:
            return "-j MASQUERADE --random-fully";
        case TargetKind::kRejectTcpReset:
            return "-j REJECT --reject-with tcp-reset";
        case TargetKind::kRejectPortUnreachable:
            return family == IpFamily::kV4 ? "-j REJECT --reject-with icmp-port-unreachable"
                                           : "-j REJECT --reject-with icmp6-port-unreachable";
    }
    return {};
}

// The states as iptables-save prints them: libxt_conntrack's order.
std::string ctstate_text(uint16_t states) {
    std::string out;
    for (auto [bit, name] :
         {std::pair{kCtStateNew, "NEW"}, std::pair{kCtStateRelated, "RELATED"},
          std::pair{kCtStateEstablished, "ESTABLISHED"}, std::pair{kCtStateDnat, "DNAT"}}) {
        if ((states & bit) == 0) continue;
        if (!out.empty()) out += ',';
        out += name;
    }
    return out;
}

// The family a rule belongs to, from the addresses it names (v4 when none).
IpFamily rule_family(const Rule& rule) {
    if (rule.source) return rule.source->family();
    if (rule.destination) return rule.destination->family();
    if (rule.target.kind == TargetKind::kDnat) return rule.target.address.family();
    return IpFamily::kV4;
}

std::string rule_text(const Rule& rule, IpFamily family) {
    std::string out;
    auto add = [&](const std::string& part) {
        if (!out.empty()) out += ' ';
        out += part;
    };
    if (rule.source)
        add(std::string(rule.source_negate ? "! " : "") + "-s " + rule.source->to_string());
    if (rule.destination) {
        add(std::string(rule.destination_negate ? "! " : "") + "-d " +
            rule.destination->to_string());
    }
    if (!rule.in_interface.empty()) add("-i " + rule.in_interface);
    if (rule.proto != 0) add("-p " + proto_name(rule.proto));
    if (!rule.comment.empty()) add(fmt::format("-m comment --comment \"{}\"", rule.comment));
    if (rule.dport != 0) add(fmt::format("-m {} --dport {}", proto_name(rule.proto), rule.dport));
    if (rule.src_type_local) add("-m addrtype --src-type LOCAL");
    if (rule.dst_type_local) add("-m addrtype --dst-type LOCAL");
    if (rule.mark_match) {
        add(fmt::format("-m mark {}--mark {:#x}/{:#x}", rule.mark_invert ? "! " : "",
                        rule.mark_value, rule.mark_mask));
    }
    if (rule.probability_denominator != 0) {
        add(fmt::format("-m statistic --mode random --probability {:.11f}",
                        1.0 / rule.probability_denominator));
    }
    if (rule.recent == RecentKind::kCheck) {
        add(fmt::format("-m recent --rcheck --seconds {} --reap --name {} --rsource",
                        rule.recent_seconds, rule.recent_name));
    } else if (rule.recent == RecentKind::kSet) {
        add(fmt::format("-m recent --set --name {} --rsource", rule.recent_name));
    }
    if (rule.ctstate != 0) {
        add(fmt::format("-m conntrack {}--ctstate {}", rule.ctstate_negate ? "! " : "",
                        ctstate_text(rule.ctstate)));
    }
    add(target_text(rule.target, family));
    return out;
}

void table_text(std::string& out, const Table& table, IpFamily family) {
    out += "*" + table.name + "\n";
    for (const auto& [name, chain] : table.chains) out += ":" + name + " - [0:0]\n";
    std::map<std::string, int> position;
    for (const HookRule& h : table.hooks) {
        out += fmt::format("-I {} {} {}\n", h.builtin, ++position[h.builtin],
                           rule_text(h.rule, family));
    }
    for (const auto& [name, chain] : table.chains) {
        for (const Rule& rule : chain.rules)
            out += "-A " + name + " " + rule_text(rule, family) + "\n";
    }
    out += "COMMIT\n";
}

}  // namespace

std::string rule_text(const Rule& rule) {
    return rule_text(rule, rule_family(rule));
}

std::string to_restore_text(const FamilyModel& model) {
    std::string out;
    table_text(out, model.nat, model.family);
    table_text(out, model.filter, model.family);
    return out;
}

uint32_t statistic_probability(uint32_t denominator) {
    if (denominator <= 1) return 0x80000000U;
    return static_cast<uint32_t>(std::lround(2147483648.0 / denominator));
}

}  // namespace sb::rules::iptables
