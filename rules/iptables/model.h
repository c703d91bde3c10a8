// The data model of switchboard's x_tables objects: per address family, the
// chains it owns in the nat and filter tables (all named SWITCHBOARD-...) and
// the jump rules it inserts into the built-in chains. It is what render()
// produces from a Plan, what the tracer in tests/unit/rules/iptables evaluates,
// what the libiptc layer writes and what to_restore_text() prints in
// iptables-restore syntax. Plain values; no kernel access.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"

namespace sb::rules::iptables {

// Every chain switchboard creates starts with this; nothing else is touched.
inline constexpr const char* kChainPrefix = "SWITCHBOARD-";
// x_tables stores a jump target's name in 29 bytes (with the NUL).
inline constexpr size_t kMaxChainName = 28;

enum class TargetKind : uint8_t {
    kJump,                   // -j CHAIN
    kAccept,                 // -j ACCEPT
    kDrop,                   // -j DROP
    kReturn,                 // -j RETURN
    kDnat,                   // -j DNAT --to-destination ADDR:PORT
    kMarkOr,                 // -j MARK --or-mark VALUE
    kMarkXor,                // -j MARK --xor-mark VALUE
    kMasquerade,             // -j MASQUERADE --random-fully
    kRejectTcpReset,         // -j REJECT --reject-with tcp-reset (rule has -p tcp)
    kRejectPortUnreachable,  // -j REJECT (icmp/icmp6 port unreachable)
};

struct Target {
    TargetKind kind = TargetKind::kAccept;
    std::string chain;  // kJump
    IpAddress address;  // kDnat
    uint16_t port = 0;  // kDnat
    uint32_t mark = 0;  // kMarkOr / kMarkXor
    bool operator==(const Target&) const = default;
};

// `-m recent`: kCheck is `--rcheck --seconds S --reap`, kSet is `--set`;
// both key on the source address (--rsource) in the list `name`.
enum class RecentKind : uint8_t { kNone, kCheck, kSet };

// `-m conntrack --ctstate`: the states a rule names, as xt_conntrack's
// state_mask bits (XT_CONNTRACK_STATE_BIT(IP_CT_...), _SNAT, _DNAT).
inline constexpr uint16_t kCtStateEstablished = 1 << 1;
inline constexpr uint16_t kCtStateRelated = 1 << 2;
inline constexpr uint16_t kCtStateNew = 1 << 3;
inline constexpr uint16_t kCtStateDnat = 1 << 7;

// One rule: every present condition must hold, then the target applies.
struct Rule {
    std::optional<Prefix> source;  // [!] -s
    bool source_negate = false;
    std::optional<Prefix> destination;  // [!] -d
    bool destination_negate = false;
    // -i NAME; NAME+ matches every interface whose name starts with NAME
    // (iptables' spelling). Empty: any. Locally originated packets have no
    // input interface and match no name.
    std::string in_interface;
    uint8_t proto = 0;            // -p (0: any)
    uint16_t dport = 0;           // -m tcp|udp|sctp --dport (needs proto)
    bool src_type_local = false;  // -m addrtype --src-type LOCAL
    bool dst_type_local = false;  // -m addrtype --dst-type LOCAL
    bool mark_match = false;      // -m mark [!] --mark VALUE/MASK
    bool mark_invert = false;
    uint32_t mark_value = 0;
    uint32_t mark_mask = 0;
    // -m statistic --mode random --probability 1/N (0: no statistic match).
    uint32_t probability_denominator = 0;
    RecentKind recent = RecentKind::kNone;
    std::string recent_name;
    uint32_t recent_seconds = 0;
    // -m conntrack [!] --ctstate STATES (kCtState* bits; 0: no conntrack match).
    uint16_t ctstate = 0;
    bool ctstate_negate = false;
    std::string comment;  // -m comment --comment (at most 255 bytes)
    Target target;

    bool operator==(const Rule&) const = default;
};

// What a rule read back from the kernel matches on the destination, and
// where it goes (TableCopy::destination_matches).
struct DestinationMatch {
    std::optional<Prefix> destination;  // [!] -d
    bool destination_negate = false;
    uint8_t proto = 0;   // -p (0: any)
    uint16_t dport = 0;  // the one port of a tcp, udp or sctp match (0: none, or a range)
    std::string target;  // the chain a jump names, else ACCEPT, DNAT, ... (libiptc's name)
    bool operator==(const DestinationMatch&) const = default;
};

struct Chain {
    std::string name;
    std::vector<Rule> rules;
    bool operator==(const Chain&) const = default;
};

// A jump rule placed in a built-in chain (PREROUTING, INPUT, ...).
struct HookRule {
    std::string builtin;
    Rule rule;
    bool operator==(const HookRule&) const = default;
};

struct Table {
    std::string name;                     // "nat" | "filter"
    std::map<std::string, Chain> chains;  // switchboard's own chains, by name
    std::vector<HookRule> hooks;          // kept at the top of the built-in chains, in order
    bool operator==(const Table&) const = default;
};

struct FamilyModel {
    IpFamily family = IpFamily::kV4;
    Table nat{"nat", {}, {}};
    Table filter{"filter", {}, {}};
    bool operator==(const FamilyModel&) const = default;
};

struct Model {
    FamilyModel v4{IpFamily::kV4, {"nat", {}, {}}, {"filter", {}, {}}};
    FamilyModel v6{IpFamily::kV6, {"nat", {}, {}}, {"filter", {}, {}}};
};

// One rule's match and target text, as iptables-save prints it
// ("-d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j SWITCHBOARD-SVC-...").
std::string rule_text(const Rule& rule);
// Both tables of one family in iptables-restore syntax (--noflush input):
// own chains are declared and filled, hook rules inserted at the top.
std::string to_restore_text(const FamilyModel& model);
// The probability x_tables stores for 1/denominator (2^31 scale).
uint32_t statistic_probability(uint32_t denominator);

}  // namespace sb::rules::iptables
