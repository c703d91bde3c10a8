#include "rules/nftables/model.h"

#include <netinet/in.h>

#include <fmt/format.h>

#include "rules/naming.h"

namespace sb::rules::nftables {

Expr nfproto(IpFamily family) {
    Expr e;
    e.kind = ExprKind::kNfproto;
    e.family = family;
    return e;
}

Expr l4proto(uint8_t proto) {
    Expr e;
    e.kind = ExprKind::kL4proto;
    e.proto = proto;
    return e;
}

Expr ct_state_new() {
    Expr e;
    e.kind = ExprKind::kCtStateNew;
    return e;
}

Expr ct_status_dnat() {
    Expr e;
    e.kind = ExprKind::kCtStatusDnat;
    return e;
}

static Expr address_match(ExprKind kind, const Prefix& prefix, bool negate) {
    Expr e;
    e.kind = kind;
    e.family = prefix.family();
    e.prefix = prefix;
    e.negate = negate;
    return e;
}

Expr saddr(const Prefix& prefix, bool negate) {
    return address_match(ExprKind::kSaddr, prefix, negate);
}

Expr daddr(const Prefix& prefix, bool negate) {
    return address_match(ExprKind::kDaddr, prefix, negate);
}

Expr fib_daddr_local() {
    Expr e;
    e.kind = ExprKind::kFibDaddrLocal;
    return e;
}

Expr fib_saddr_local() {
    Expr e;
    e.kind = ExprKind::kFibSaddrLocal;
    return e;
}

static Expr named(ExprKind kind, std::string name) {
    Expr e;
    e.kind = kind;
    e.name = std::move(name);
    return e;
}

Expr iifname(std::string name) {
    return named(ExprKind::kIifname, std::move(name));
}

Expr iifname_prefix(std::string prefix) {
    return named(ExprKind::kIifnamePrefix, std::move(prefix));
}

static Expr with_value(ExprKind kind, uint32_t value) {
    Expr e;
    e.kind = kind;
    e.value = value;
    return e;
}

Expr mark_set_or(uint32_t mask) {
    return with_value(ExprKind::kMarkSetOr, mask);
}
Expr mark_set_xor(uint32_t mask) {
    return with_value(ExprKind::kMarkSetXor, mask);
}
Expr mark_unset(uint32_t mask) {
    return with_value(ExprKind::kMarkUnset, mask);
}
Expr numgen_mod_is_zero(uint32_t modulus) {
    return with_value(ExprKind::kNumgen, modulus);
}

static Expr set_ref(ExprKind kind, IpFamily family, std::string set) {
    Expr e;
    e.kind = kind;
    e.family = family;
    e.name = std::move(set);
    return e;
}

Expr vmap_daddr_proto_port(IpFamily family, std::string set) {
    return set_ref(ExprKind::kVmapDaddrProtoPort, family, std::move(set));
}

Expr vmap_proto_port(std::string set) {
    return set_ref(ExprKind::kVmapProtoPort, IpFamily::kV4, std::move(set));
}

Expr set_saddr_daddr(IpFamily family, std::string set) {
    return set_ref(ExprKind::kSetSaddrDaddr, family, std::move(set));
}

Expr set_daddr(IpFamily family, std::string set) {
    return set_ref(ExprKind::kSetDaddr, family, std::move(set));
}

Expr affinity_update(IpFamily family, std::string set, uint32_t timeout_seconds,
                     const IpAddress& address, uint16_t port) {
    Expr e = set_ref(ExprKind::kAffinityUpdate, family, std::move(set));
    e.value = timeout_seconds;
    e.prefix = Prefix(address, address.is_v4() ? 32 : 128);
    e.port = port;
    return e;
}

Expr affinity_dnat(IpFamily family, std::string set) {
    return set_ref(ExprKind::kAffinityDnat, family, std::move(set));
}

Expr dnat(const IpAddress& address, uint16_t port) {
    Expr e;
    e.kind = ExprKind::kDnat;
    e.family = address.family();
    e.prefix = Prefix(address, address.is_v4() ? 32 : 128);
    e.port = port;
    return e;
}

static Expr dnat_map(ExprKind kind, IpFamily family, std::string map, uint32_t modulus) {
    Expr e = set_ref(kind, family, std::move(map));
    e.value = modulus;
    return e;
}

Expr dnat_by_address(IpFamily family, std::string map, uint32_t modulus) {
    return dnat_map(ExprKind::kDnatByAddress, family, std::move(map), modulus);
}

Expr dnat_by_port(IpFamily family, std::string map, uint32_t modulus) {
    return dnat_map(ExprKind::kDnatByPort, family, std::move(map), modulus);
}

Expr masquerade() {
    Expr e;
    e.kind = ExprKind::kMasquerade;
    return e;
}

Expr reject_tcp_reset() {
    Expr e;
    e.kind = ExprKind::kRejectTcpReset;
    return e;
}

Expr reject_port_unreachable() {
    Expr e;
    e.kind = ExprKind::kRejectPortUnreachable;
    return e;
}

static Expr port_match(ExprKind kind, uint16_t port) {
    Expr e;
    e.kind = kind;
    e.port = port;
    return e;
}

Expr th_dport(uint16_t port) {
    return port_match(ExprKind::kThDport, port);
}

Expr th_sport(uint16_t port) {
    return port_match(ExprKind::kThSport, port);
}

Expr notrack() {
    Expr e;
    e.kind = ExprKind::kNotrack;
    return e;
}

Expr verdict(VerdictKind kind, std::string chain) {
    Expr e;
    e.kind = ExprKind::kVerdict;
    e.verdict = Verdict{kind, std::move(chain)};
    return e;
}

namespace {

const char* ip_keyword(IpFamily family) {
    return family == IpFamily::kV4 ? "ip" : "ip6";
}

std::string prefix_text(const Prefix& prefix) {
    const unsigned full = prefix.family() == IpFamily::kV4 ? 32 : 128;
    if (prefix.length() == full) return prefix.address().to_string();
    return prefix.to_string();
}

std::string address_text(const IpAddress& address) {
    return address.is_v4() ? address.to_string() : "[" + address.to_string() + "]";
}

std::string verdict_text(const Verdict& v) {
    switch (v.kind) {
        case VerdictKind::kAccept:
            return "accept";
        case VerdictKind::kDrop:
            return "drop";
        case VerdictKind::kReturn:
            return "return";
        case VerdictKind::kJump:
            return "jump " + v.chain;
        case VerdictKind::kGoto:
            return "goto " + v.chain;
        case VerdictKind::kNone:
            break;
    }
    return "continue";
}

std::string flow_key_text(IpFamily family) {
    const char* ip = ip_keyword(family);
    return fmt::format("{0} saddr . {0} daddr . meta l4proto . th dport", ip);
}

std::string expr_text(const Expr& e) {
    const char* ip = ip_keyword(e.family);
    switch (e.kind) {
        case ExprKind::kNfproto:
            return e.family == IpFamily::kV4 ? "meta nfproto ipv4" : "meta nfproto ipv6";
        case ExprKind::kL4proto:
            return "meta l4proto " + proto_name(e.proto);
        case ExprKind::kCtStateNew:
            return "ct state new";
        case ExprKind::kCtStatusDnat:
            return "ct status dnat";
        case ExprKind::kSaddr:
            return fmt::format("{} saddr {}{}", ip, e.negate ? "!= " : "", prefix_text(e.prefix));
        case ExprKind::kDaddr:
            return fmt::format("{} daddr {}{}", ip, e.negate ? "!= " : "", prefix_text(e.prefix));
        case ExprKind::kFibDaddrLocal:
            return "fib daddr type local";
        case ExprKind::kFibSaddrLocal:
            return "fib saddr type local";
        case ExprKind::kIifname:
            return fmt::format("iifname \"{}\"", e.name);
        case ExprKind::kIifnamePrefix:
            return fmt::format("iifname \"{}*\"", e.name);
        case ExprKind::kMarkSetOr:
            return fmt::format("meta mark set meta mark | {:#x}", e.value);
        case ExprKind::kMarkSetXor:
            return fmt::format("meta mark set meta mark ^ {:#x}", e.value);
        case ExprKind::kMarkUnset:
            return fmt::format("meta mark & {:#x} == 0", e.value);
        case ExprKind::kNumgen:
            return fmt::format("numgen random mod {} == 0", e.value);
        case ExprKind::kVmapDaddrProtoPort:
            return fmt::format("{} daddr . meta l4proto . th dport vmap @{}", ip, e.name);
        case ExprKind::kVmapProtoPort:
            return fmt::format("meta l4proto . th dport vmap @{}", e.name);
        case ExprKind::kSetDaddr:
            return fmt::format("{} daddr @{}", ip, e.name);
        case ExprKind::kSetSaddrDaddr:
            return fmt::format("{0} saddr . {0} daddr @{1}", ip, e.name);
        case ExprKind::kAffinityUpdate:
            return fmt::format("update @{} {{ {} timeout {}s : {} . {} }}", e.name,
                               flow_key_text(e.family), e.value, e.prefix.address().to_string(),
                               e.port);
        case ExprKind::kAffinityDnat:
            return fmt::format("dnat {} to {} map @{}", ip, flow_key_text(e.family), e.name);
        case ExprKind::kDnat:
            return fmt::format("dnat {} to {}:{}", ip, address_text(e.prefix.address()), e.port);
        case ExprKind::kDnatByAddress:
            return fmt::format(
                "dnat {0} to {0} daddr . meta l4proto . th dport . numgen random mod {1} map @{2}",
                ip, e.value, e.name);
        case ExprKind::kDnatByPort:
            return fmt::format("dnat {} to meta l4proto . th dport . numgen random mod {} map @{}",
                               ip, e.value, e.name);
        case ExprKind::kMasquerade:
            return "masquerade";
        case ExprKind::kRejectTcpReset:
            return "reject with tcp reset";
        case ExprKind::kRejectPortUnreachable:
            return "reject";
        case ExprKind::kThDport:
            return fmt::format("th dport {}", e.port);
        case ExprKind::kThSport:
            return fmt::format("th sport {}", e.port);
        case ExprKind::kNotrack:
            return "notrack";
        case ExprKind::kVerdict:
            return verdict_text(e.verdict);
    }
    return {};
}

const char* addr_type(IpFamily family) {
    return family == IpFamily::kV4 ? "ipv4_addr" : "ipv6_addr";
}

}  // namespace

std::string set_type_text(const Set& set) {
    const char* a = addr_type(set.family);
    switch (set.layout) {
        case SetLayout::kAddrProtoPortVerdict:
            return fmt::format("type {} . inet_proto . inet_service : verdict;", a);
        case SetLayout::kProtoPortVerdict:
            return "type inet_proto . inet_service : verdict;";
        case SetLayout::kAddrAddr:
            return fmt::format("type {0} . {0};", a);
        case SetLayout::kAddr:
            return fmt::format("type {};", a);
        case SetLayout::kAffinity:
            return fmt::format(
                "type {0} . {0} . inet_proto . inet_service : {0} . inet_service; flags "
                "dynamic,timeout;",
                a);
        case SetLayout::kBackendsByAddress:
            return fmt::format(
                "typeof {0} daddr . meta l4proto . th dport . numgen random mod 1 : {0} daddr . th "
                "dport;",
                ip_keyword(set.family));
        case SetLayout::kBackendsByPort:
            return fmt::format(
                "typeof meta l4proto . th dport . numgen random mod 1 : {} daddr . th dport;",
                ip_keyword(set.family));
    }
    return {};
}

std::string element_text(const Set& set, const ElementKey& key, const Verdict& v) {
    switch (set.layout) {
        case SetLayout::kAddrProtoPortVerdict:
            return fmt::format("{} . {} . {} : {}", key.a.to_string(), proto_name(key.proto),
                               key.port, verdict_text(v));
        case SetLayout::kProtoPortVerdict:
            return fmt::format("{} . {} : {}", proto_name(key.proto), key.port, verdict_text(v));
        case SetLayout::kAddrAddr:
            return fmt::format("{} . {}", key.a.to_string(), key.b.to_string());
        case SetLayout::kAddr:
            return key.a.to_string();
        case SetLayout::kBackendsByAddress:
            return fmt::format("{} . {} . {} . {} : {} . {}", key.a.to_string(),
                               proto_name(key.proto), key.port, key.slot, v.address.to_string(),
                               v.port);
        case SetLayout::kBackendsByPort:
            return fmt::format("{} . {} . {} : {} . {}", proto_name(key.proto), key.port, key.slot,
                               v.address.to_string(), v.port);
        case SetLayout::kAffinity:
            break;
    }
    return {};
}

std::string to_nft_text(const Rule& rule) {
    std::string out;
    for (const Expr& e : rule) {
        if (!out.empty()) out += ' ';
        out += expr_text(e);
    }
    return out;
}

std::string to_nft_text(const Model& model) {
    std::string out = fmt::format("table inet {} {{\n", model.table);
    for (const auto& [name, set] : model.sets) {
        const bool is_map = !is_plain_set(set.layout);
        out +=
            fmt::format("\t{} {} {{\n\t\t{}\n", is_map ? "map" : "set", name, set_type_text(set));
        if (!set.elements.empty()) {
            out += "\t\telements = {";
            bool first = true;
            for (const auto& [key, v] : set.elements) {
                out += first ? " " : ",\n\t\t\t     ";
                out += element_text(set, key, v);
                first = false;
            }
            out += " }\n";
        }
        out += "\t}\n";
    }
    for (const auto& [name, chain] : model.chains) {
        out += fmt::format("\tchain {} {{\n", name);
        if (chain.hook) {
            out += fmt::format("\t\ttype {} hook {} priority {}; policy accept;\n",
                               chain.hook->type, chain.hook->hook, chain.hook->priority);
        }
        for (const Rule& rule : chain.rules) {
            out += "\t\t" + to_nft_text(rule) + "\n";
        }
        out += "\t}\n";
    }
    out += "}\n";
    return out;
}

}  // namespace sb::rules::nftables
