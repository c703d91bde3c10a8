// The data model of switchboard's nftables objects: one `inet switchboard`
// table holding chains (rules as expression lists) and sets/maps with their
// elements. It is what render() produces from a Plan, what diff() compares,
// what the netlink layer turns into messages and what to_nft_text() prints in
// `nft -f` syntax. Plain values; no kernel access.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "rules/nftables/element_map.h"

namespace sb::rules::nftables {

inline constexpr const char* kTableName = "switchboard";

// One term of a rule. Terms that read the network header (addresses) carry
// the family; a rule using them starts with a kNfproto term so that the
// kernel never reads an IPv6 header as IPv4 in the inet table.
enum class ExprKind : uint8_t {
    kNfproto,             // meta nfproto ipv4|ipv6                      (family)
    kL4proto,             // meta l4proto tcp                            (proto)
    kCtStateNew,          // ct state new
    kCtStatusDnat,        // ct status dnat
    kSaddr,               // ip saddr [!=] PREFIX                        (family, prefix, negate)
    kDaddr,               // ip daddr [!=] PREFIX                        (family, prefix, negate)
    kFibDaddrLocal,       // fib daddr type local
    kFibSaddrLocal,       // fib saddr type local
    kIifname,             // meta iifname "NAME"                         (name)
    kIifnamePrefix,       // meta iifname "NAME*": the name starts with NAME (name)
    kMarkSetOr,           // meta mark set meta mark | VALUE
    kMarkSetXor,          // meta mark set meta mark ^ VALUE
    kMarkUnset,           // meta mark & VALUE == 0
    kNumgen,              // numgen random mod VALUE == 0
    kVmapDaddrProtoPort,  // ip daddr . meta l4proto . th dport vmap @NAME (family)
    kVmapProtoPort,       // meta l4proto . th dport vmap @NAME
    kSetSaddrDaddr,       // ip saddr . ip daddr @NAME                   (family)
    kSetDaddr,            // ip daddr @NAME (family)
    kAffinityUpdate,      // update @NAME { saddr . daddr . l4proto . dport timeout VALUE s : ADDR .
                          // PORT }
    kAffinityDnat,        // dnat ip to saddr . daddr . l4proto . dport map @NAME
    kDnat,            // dnat ip to ADDR:PORT                        (family, prefix.address, port)
    kDnatByAddress,   // dnat ip to ip daddr . meta l4proto . th dport . numgen random mod VALUE map
                      // @NAME
    kDnatByPort,      // dnat ip to meta l4proto . th dport . numgen random mod VALUE map @NAME
    kMasquerade,      // masquerade
    kRejectTcpReset,  // reject with tcp reset
    kRejectPortUnreachable,  // reject (icmpx port-unreachable)
    kThDport,                // th dport VALUE (after a kL4proto term)      (port)
    kThSport,                // th sport VALUE (after a kL4proto term)      (port)
    kNotrack,                // notrack: the packet gets no conntrack entry
    kVerdict,                // accept | drop | return | jump CHAIN | goto CHAIN
};

struct Expr {
    ExprKind kind = ExprKind::kVerdict;
    IpFamily family = IpFamily::kV4;
    bool negate = false;
    uint8_t proto = 0;
    uint16_t port = 0;
    uint32_t value = 0;
    Prefix prefix;     // addresses: a /32 or /128 for single addresses
    std::string name;  // set name; interface name (prefix) for kIifname(Prefix)
    Verdict verdict;

    bool operator==(const Expr&) const = default;
};

using Rule = std::vector<Expr>;

// Builders keep render code short and the field use of each kind in one place.
Expr nfproto(IpFamily family);
Expr l4proto(uint8_t proto);
Expr ct_state_new();
Expr ct_status_dnat();
Expr saddr(const Prefix& prefix, bool negate = false);
Expr daddr(const Prefix& prefix, bool negate = false);
Expr fib_daddr_local();
Expr fib_saddr_local();
// The input interface is `name` / starts with `prefix`. Locally originated
// packets have no input interface: their name is "" and matches neither.
Expr iifname(std::string name);
Expr iifname_prefix(std::string prefix);
Expr mark_set_or(uint32_t mask);
Expr mark_set_xor(uint32_t mask);
Expr mark_unset(uint32_t mask);
Expr numgen_mod_is_zero(uint32_t modulus);
Expr vmap_daddr_proto_port(IpFamily family, std::string set);
Expr vmap_proto_port(std::string set);
Expr set_saddr_daddr(IpFamily family, std::string set);
Expr set_daddr(IpFamily family, std::string set);
Expr affinity_update(IpFamily family, std::string set, uint32_t timeout_seconds,
                     const IpAddress& address, uint16_t port);
Expr affinity_dnat(IpFamily family, std::string set);
Expr dnat(const IpAddress& address, uint16_t port);
Expr dnat_by_address(IpFamily family, std::string map, uint32_t modulus);
Expr dnat_by_port(IpFamily family, std::string map, uint32_t modulus);
Expr masquerade();
Expr reject_tcp_reset();
Expr reject_port_unreachable();
// Transport ports; only meaningful after l4proto(tcp|udp), which puts the
// ports at the start of the transport header.
Expr th_dport(uint16_t port);
Expr th_sport(uint16_t port);
// Valid in a raw-priority (-300) chain of the prerouting or output hook only.
Expr notrack();
Expr verdict(VerdictKind kind, std::string chain = {});

struct Hook {
    std::string type;      // "filter" | "nat"
    std::string hook;      // "prerouting" | "input" | "forward" | "output" | "postrouting"
    int32_t priority = 0;  // -300 raw, -110 / -90 filter, -100 / 100 nat
    bool operator==(const Hook&) const = default;
};

struct Chain {
    std::string name;
    std::optional<Hook> hook;  // base chains only (policy accept)
    std::vector<Rule> rules;
    bool operator==(const Chain&) const = default;
};

// The element layouts switchboard uses; each fixes the key (and data) types.
enum class SetLayout : uint8_t {
    kAddrProtoPortVerdict,  // ADDR . inet_proto . inet_service : verdict
    kProtoPortVerdict,      // inet_proto . inet_service : verdict
    kAddrAddr,              // ADDR . ADDR
    kAddr,                  // ADDR
    kAffinity,           // ADDR . ADDR . inet_proto . inet_service : ADDR . inet_service, dynamic
    kBackendsByAddress,  // ADDR . inet_proto . inet_service . slot : ADDR . inet_service
    kBackendsByPort,     // inet_proto . inet_service . slot : ADDR . inet_service
};

// Sets without data (the rest are maps).
inline bool is_plain_set(SetLayout layout) {
    return layout == SetLayout::kAddrAddr || layout == SetLayout::kAddr;
}

struct Set {
    std::string name;
    SetLayout layout = SetLayout::kAddrProtoPortVerdict;
    IpFamily family = IpFamily::kV4;
    // Static elements; empty and unmanaged for the dynamic kAffinity layout.
    ElementMap elements;
    // For the elements more than one service-port fragment contributes: how
    // many besides the first (maintained by add_fragment/remove_fragment; not
    // part of the kernel state). An element of `elements` not listed here has
    // exactly one contributor. Only the few shared elements (hairpin pairs,
    // a ClusterIP listed twice) take an entry: a count for every element
    // held about 20 MB at 10k Services x 10 endpoints (docs/nftables.md,
    // "Memory").
    std::map<ElementKey, uint32_t> shared_refs;
    // Read back from the kernel with a type switchboard does not create.
    bool unknown = false;
    bool dynamic() const { return layout == SetLayout::kAffinity; }
    bool same_type(const Set& other) const {
        return !unknown && !other.unknown && layout == other.layout && family == other.family;
    }
};

struct Model {
    // The `inet` table the model is: switchboard's own, or a small table of
    // another part (the IPVS mode's helper rules, rules/ipvs/helper_rules.h).
    std::string table = kTableName;
    std::map<std::string, Chain> chains;
    // How many service-port fragments use each shared chain (not kernel state).
    std::map<std::string, uint32_t> chain_refs;
    std::map<std::string, Set> sets;
};

// Text in `nft -f` syntax: `table inet switchboard { ... }`. Loading it into
// a kernel without the table creates exactly `model`.
std::string to_nft_text(const Model& model);
// One rule in nft syntax (no trailing newline); for logs and tests.
std::string to_nft_text(const Rule& rule);
// One element in nft syntax ("10.0.0.1 . tcp . 80 : goto CHAIN").
std::string element_text(const Set& set, const ElementKey& key, const Verdict& value);
// "type ...; [flags ...;]" of a set.
std::string set_type_text(const Set& set);

}  // namespace sb::rules::nftables
