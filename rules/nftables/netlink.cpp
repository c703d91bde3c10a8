#include "rules/nftables/netlink.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <fmt/format.h>
#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <span>
#include <vector>

#include "base/log.h"
#include "rules/netlink_answers.h"

namespace sb::rules::nftables {

namespace {

// nft's datatype numbers (concatenations: (a << 6 | b) << 6 | c ...), so that
// `nft list table` prints the elements with their proper types.
constexpr uint32_t kTypeVerdict = 1;
constexpr uint32_t kTypeIpv4 = 7;
constexpr uint32_t kTypeIpv6 = 8;
constexpr uint32_t kTypeInetProto = 12;
constexpr uint32_t kTypeInetService = 13;
constexpr uint32_t kTypeInteger = 4;           // numgen's value in a backend map key
constexpr uint32_t kDataVerdict = 0xffffff00;  // NFT_DATA_VERDICT
constexpr uint32_t kElementsPerMessage = 256;  // keeps a message's nested attribute < 64 KiB

// The user data nft attaches to a `typeof ... numgen random mod 1 : ...` map
// (key/data byte order and the typeof expressions), copied from what nft 1.0.6
// sends: without it `nft list` cannot print the backend maps' integer slot.
constexpr uint8_t kUdataByAddress4[] = {
    0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x03, 0x60, 0x00, 0x04,
    0x0d, 0x00, 0x00, 0x00, 0x01, 0x58, 0x00, 0x14, 0x00, 0x04, 0x07, 0x00, 0x00, 0x00, 0x01, 0x0c,
    0x00, 0x04, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x04, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x0e, 0x00, 0x04,
    0x09, 0x00, 0x00, 0x00, 0x01, 0x06, 0x00, 0x04, 0x10, 0x00, 0x00, 0x00, 0x02, 0x14, 0x00, 0x04,
    0x07, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00, 0x04, 0x0b, 0x00, 0x00, 0x00, 0x01, 0x04, 0x02, 0x00,
    0x00, 0x00, 0x03, 0x1a, 0x00, 0x04, 0x17, 0x00, 0x00, 0x00, 0x01, 0x12, 0x00, 0x04, 0x01, 0x00,
    0x00, 0x00, 0x01, 0x04, 0x01, 0x00, 0x00, 0x00, 0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x04, 0x34,
    0x00, 0x04, 0x0d, 0x00, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x14, 0x00, 0x04, 0x07, 0x00, 0x00, 0x00,
    0x01, 0x0c, 0x00, 0x04, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x04, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x14,
    0x00, 0x04, 0x07, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00, 0x04, 0x0b, 0x00, 0x00, 0x00, 0x01, 0x04,
    0x02, 0x00, 0x00, 0x00, 0x06, 0x04, 0x00, 0x00, 0x00, 0x00};
constexpr uint8_t kUdataByPort4[] = {
    0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x01, 0x04, 0x00, 0x00, 0x00, 0x00, 0x03, 0x4a, 0x00,
    0x04, 0x0d, 0x00, 0x00, 0x00, 0x01, 0x42, 0x00, 0x0e, 0x00, 0x04, 0x09, 0x00, 0x00, 0x00,
    0x01, 0x06, 0x00, 0x04, 0x10, 0x00, 0x00, 0x00, 0x01, 0x14, 0x00, 0x04, 0x07, 0x00, 0x00,
    0x00, 0x01, 0x0c, 0x00, 0x04, 0x0b, 0x00, 0x00, 0x00, 0x01, 0x04, 0x02, 0x00, 0x00, 0x00,
    0x02, 0x1a, 0x00, 0x04, 0x17, 0x00, 0x00, 0x00, 0x01, 0x12, 0x00, 0x04, 0x01, 0x00, 0x00,
    0x00, 0x01, 0x04, 0x01, 0x00, 0x00, 0x00, 0x02, 0x04, 0x00, 0x00, 0x00, 0x00, 0x04, 0x34,
    0x00, 0x04, 0x0d, 0x00, 0x00, 0x00, 0x01, 0x2c, 0x00, 0x14, 0x00, 0x04, 0x07, 0x00, 0x00,
    0x00, 0x01, 0x0c, 0x00, 0x04, 0x0c, 0x00, 0x00, 0x00, 0x01, 0x04, 0x0c, 0x00, 0x00, 0x00,
    0x01, 0x14, 0x00, 0x04, 0x07, 0x00, 0x00, 0x00, 0x01, 0x0c, 0x00, 0x04, 0x0b, 0x00, 0x00,
    0x00, 0x01, 0x04, 0x02, 0x00, 0x00, 0x00, 0x06, 0x04, 0x00, 0x00, 0x00, 0x00};
// The IPv6 variants differ only in the `ip6 daddr` expressions' protocol
// header and type bytes at these offsets.
constexpr std::pair<size_t, uint8_t> kUdataByAddress6Patch[] = {
    {34, 0x0d}, {40, 0x09}, {132, 0x0d}, {138, 0x09}};
constexpr std::pair<size_t, uint8_t> kUdataByPort6Patch[] = {{110, 0x0d}, {116, 0x09}};

std::vector<uint8_t> backend_map_udata(SetLayout layout, IpFamily family) {
    const bool by_address = layout == SetLayout::kBackendsByAddress;
    std::vector<uint8_t> out =
        by_address ? std::vector<uint8_t>(std::begin(kUdataByAddress4), std::end(kUdataByAddress4))
                   : std::vector<uint8_t>(std::begin(kUdataByPort4), std::end(kUdataByPort4));
    if (family == IpFamily::kV6) {
        for (const auto& [offset, value] :
             by_address ? std::span<const std::pair<size_t, uint8_t>>(kUdataByAddress6Patch)
                        : std::span<const std::pair<size_t, uint8_t>>(kUdataByPort6Patch)) {
            out[offset] = value;
        }
    }
    return out;
}

uint32_t concat(std::initializer_list<uint32_t> types) {
    uint32_t t = 0;
    for (uint32_t x : types) t = (t << 6) | x;
    return t;
}

uint32_t addr_len(IpFamily f) {
    return f == IpFamily::kV4 ? 4 : 16;
}
uint32_t addr_type(IpFamily f) {
    return f == IpFamily::kV4 ? kTypeIpv4 : kTypeIpv6;
}

struct SetShape {
    uint32_t flags, key_type, key_len, data_type, data_len;
};

SetShape shape_of(SetLayout layout, IpFamily f) {
    const uint32_t a = addr_type(f), n = addr_len(f);
    switch (layout) {
        case SetLayout::kAddrProtoPortVerdict:
            return {NFT_SET_MAP, concat({a, kTypeInetProto, kTypeInetService}), n + 8, kDataVerdict,
                    0};
        case SetLayout::kProtoPortVerdict:
            return {NFT_SET_MAP, concat({kTypeInetProto, kTypeInetService}), 8, kDataVerdict, 0};
        case SetLayout::kAddrAddr:
            return {0, concat({a, a}), 2 * n, 0, 0};
        case SetLayout::kAddr:
            return {0, a, n, 0, 0};
        case SetLayout::kAffinity:
            return {NFT_SET_MAP | NFT_SET_TIMEOUT | NFT_SET_EVAL,
                    concat({a, a, kTypeInetProto, kTypeInetService}), 2 * n + 8,
                    concat({a, kTypeInetService}), n + 4};
        case SetLayout::kBackendsByAddress:
            return {NFT_SET_MAP, concat({a, kTypeInetProto, kTypeInetService, kTypeInteger}),
                    n + 12, concat({a, kTypeInetService}), n + 4};
        case SetLayout::kBackendsByPort:
            return {NFT_SET_MAP, concat({kTypeInetProto, kTypeInetService, kTypeInteger}), 12,
                    concat({a, kTypeInetService}), n + 4};
    }
    return {};
}

std::vector<uint8_t> key_bytes(SetLayout layout, const ElementKey& k) {
    std::vector<uint8_t> out;
    auto put_addr = [&](const IpAddress& a) {
        out.insert(out.end(), a.bytes(), a.bytes() + a.size());
    };
    auto put_proto = [&] { out.insert(out.end(), {k.proto, 0, 0, 0}); };
    auto put_port = [&] {
        out.insert(out.end(),
                   {static_cast<uint8_t>(k.port >> 8), static_cast<uint8_t>(k.port), 0, 0});
    };
    // numgen writes its value in host byte order.
    auto put_slot = [&] {
        const auto* p = reinterpret_cast<const uint8_t*>(&k.slot);
        out.insert(out.end(), p, p + 4);
    };
    switch (layout) {
        case SetLayout::kAddrProtoPortVerdict:
            put_addr(k.a);
            put_proto();
            put_port();
            break;
        case SetLayout::kProtoPortVerdict:
            put_proto();
            put_port();
            break;
        case SetLayout::kAddrAddr:
            put_addr(k.a);
            put_addr(k.b);
            break;
        case SetLayout::kAddr:
            put_addr(k.a);
            break;
        case SetLayout::kBackendsByAddress:
            put_addr(k.a);
            put_proto();
            put_port();
            put_slot();
            break;
        case SetLayout::kBackendsByPort:
            put_proto();
            put_port();
            put_slot();
            break;
        case SetLayout::kAffinity:
            break;
    }
    return out;
}

int verdict_code(VerdictKind kind) {
    switch (kind) {
        case VerdictKind::kAccept:
            return NF_ACCEPT;
        case VerdictKind::kDrop:
            return NF_DROP;
        case VerdictKind::kReturn:
            return NFT_RETURN;
        case VerdictKind::kJump:
            return NFT_JUMP;
        case VerdictKind::kGoto:
            return NFT_GOTO;
        case VerdictKind::kNone:
            break;
    }
    return NFT_CONTINUE;
}

uint32_t hook_number(const std::string& hook) {
    if (hook == "prerouting") return NF_INET_PRE_ROUTING;
    if (hook == "input") return NF_INET_LOCAL_IN;
    if (hook == "forward") return NF_INET_FORWARD;
    if (hook == "output") return NF_INET_LOCAL_OUT;
    return NF_INET_POST_ROUTING;
}

const char* hook_name(uint32_t number) {
    switch (number) {
        case NF_INET_PRE_ROUTING:
            return "prerouting";
        case NF_INET_LOCAL_IN:
            return "input";
        case NF_INET_FORWARD:
            return "forward";
        case NF_INET_LOCAL_OUT:
            return "output";
        default:
            return "postrouting";
    }
}

// ---- rule expressions -------------------------------------------------------

class RuleBuilder {
  public:
    explicit RuleBuilder(nftnl_rule* rule) : rule_(rule) {}

    void add(const Expr& e) {
        const uint32_t n = addr_len(e.family);
        const uint32_t r0 = NFT_REG32_00;
        switch (e.kind) {
            case ExprKind::kNfproto:
                meta_load(NFT_META_NFPROTO, NFT_REG_1);
                cmp_u8(NFT_CMP_EQ, e.family == IpFamily::kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
                break;
            case ExprKind::kL4proto:
                meta_load(NFT_META_L4PROTO, NFT_REG_1);
                cmp_u8(NFT_CMP_EQ, e.proto);
                break;
            case ExprKind::kCtStateNew:
                ct_load(NFT_CT_STATE);
                mask_is_set(NF_CT_STATE_BIT(IP_CT_NEW));
                break;
            case ExprKind::kCtStatusDnat:
                ct_load(NFT_CT_STATUS);
                mask_is_set(IPS_DST_NAT);
                break;
            case ExprKind::kSaddr:
            case ExprKind::kDaddr:
                address_match(e);
                break;
            case ExprKind::kFibDaddrLocal:
            case ExprKind::kFibSaddrLocal: {
                nftnl_expr* x = expr("fib");
                nftnl_expr_set_u32(x, NFTNL_EXPR_FIB_DREG, NFT_REG_1);
                nftnl_expr_set_u32(x, NFTNL_EXPR_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
                nftnl_expr_set_u32(
                    x, NFTNL_EXPR_FIB_FLAGS,
                    e.kind == ExprKind::kFibDaddrLocal ? NFTA_FIB_F_DADDR : NFTA_FIB_F_SADDR);
                push(x);
                cmp_u32(NFT_CMP_EQ, RTN_LOCAL);
                break;
            }
            case ExprKind::kIifname:
            case ExprKind::kIifnamePrefix: {
                // As nft compiles `iifname "NAME"`: the name NUL-padded to
                // IFNAMSIZ; `iifname "NAME*"`: the prefix bytes only.
                meta_load(NFT_META_IIFNAME, NFT_REG_1);
                char name[IFNAMSIZ] = {};
                const size_t len = std::min(e.name.size(), sizeof(name) - 1);
                std::memcpy(name, e.name.data(), len);
                cmp(NFT_CMP_EQ, name,
                    e.kind == ExprKind::kIifname ? sizeof(name) : static_cast<uint32_t>(len));
                break;
            }
            case ExprKind::kMarkSetOr:
                meta_load(NFT_META_MARK, NFT_REG_1);
                bitwise(~e.value, e.value);
                meta_set_mark();
                break;
            case ExprKind::kMarkSetXor:
                meta_load(NFT_META_MARK, NFT_REG_1);
                bitwise(0xffffffff, e.value);
                meta_set_mark();
                break;
            case ExprKind::kMarkUnset:
                meta_load(NFT_META_MARK, NFT_REG_1);
                bitwise(e.value, 0);
                cmp_u32(NFT_CMP_EQ, 0);
                break;
            case ExprKind::kNumgen:
                numgen(NFT_REG_1, e.value);
                cmp_u32(NFT_CMP_EQ, 0);
                break;
            case ExprKind::kVmapDaddrProtoPort:
                payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(e.family), n, r0);
                meta_load(NFT_META_L4PROTO, r0 + n / 4);
                payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, r0 + n / 4 + 1);
                lookup(e.name, r0, NFT_REG_VERDICT);
                break;
            case ExprKind::kVmapProtoPort:
                meta_load(NFT_META_L4PROTO, r0);
                payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, r0 + 1);
                lookup(e.name, r0, NFT_REG_VERDICT);
                break;
            case ExprKind::kSetDaddr:
                payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(e.family), n, NFT_REG_1);
                lookup(e.name, NFT_REG_1, std::nullopt);
                break;
            case ExprKind::kSetSaddrDaddr:
                payload_load(NFT_PAYLOAD_NETWORK_HEADER, saddr_offset(e.family), n, r0);
                payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(e.family), n, r0 + n / 4);
                lookup(e.name, r0, std::nullopt);
                break;
            case ExprKind::kAffinityUpdate: {
                flow_key(e.family);
                const uint32_t data = r0 + 2 * n / 4 + 2;
                immediate(data, e.prefix.address().bytes(), n);
                const uint8_t port[2] = {static_cast<uint8_t>(e.port >> 8),
                                         static_cast<uint8_t>(e.port)};
                immediate(data + n / 4, port, 2);
                nftnl_expr* x = expr("dynset");
                nftnl_expr_set_u32(x, NFTNL_EXPR_DYNSET_SREG_KEY, r0);
                nftnl_expr_set_u32(x, NFTNL_EXPR_DYNSET_SREG_DATA, data);
                nftnl_expr_set_u32(x, NFTNL_EXPR_DYNSET_OP, NFT_DYNSET_OP_UPDATE);
                nftnl_expr_set_u64(x, NFTNL_EXPR_DYNSET_TIMEOUT, uint64_t{e.value} * 1000);
                nftnl_expr_set_str(x, NFTNL_EXPR_DYNSET_SET_NAME, e.name.c_str());
                push(x);
                break;
            }
            case ExprKind::kAffinityDnat:
                flow_key(e.family);
                lookup(e.name, r0, r0);
                nat(e.family, r0, r0 + n / 4);
                break;
            case ExprKind::kDnat: {
                immediate(r0, e.prefix.address().bytes(), n);
                const uint8_t port[2] = {static_cast<uint8_t>(e.port >> 8),
                                         static_cast<uint8_t>(e.port)};
                immediate(r0 + n / 4, port, 2);
                nat(e.family, r0, r0 + n / 4);
                break;
            }
            case ExprKind::kDnatByAddress:
                payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(e.family), n, r0);
                meta_load(NFT_META_L4PROTO, r0 + n / 4);
                payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, r0 + n / 4 + 1);
                numgen(r0 + n / 4 + 2, e.value);
                lookup(e.name, r0, r0);
                nat(e.family, r0, r0 + n / 4);
                break;
            case ExprKind::kDnatByPort:
                meta_load(NFT_META_L4PROTO, r0);
                payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, r0 + 1);
                numgen(r0 + 2, e.value);
                lookup(e.name, r0, r0);
                nat(e.family, r0, r0 + n / 4);
                break;
            case ExprKind::kMasquerade:
                push(expr("masq"));
                break;
            case ExprKind::kRejectTcpReset:
            case ExprKind::kRejectPortUnreachable: {
                nftnl_expr* x = expr("reject");
                const bool tcp = e.kind == ExprKind::kRejectTcpReset;
                nftnl_expr_set_u32(x, NFTNL_EXPR_REJECT_TYPE,
                                   tcp ? NFT_REJECT_TCP_RST : NFT_REJECT_ICMPX_UNREACH);
                nftnl_expr_set_u8(x, NFTNL_EXPR_REJECT_CODE,
                                  tcp ? 0 : NFT_REJECT_ICMPX_PORT_UNREACH);
                push(x);
                break;
            }
            case ExprKind::kThDport:
            case ExprKind::kThSport: {
                payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, e.kind == ExprKind::kThSport ? 0 : 2, 2,
                             NFT_REG_1);
                const uint8_t port[2] = {static_cast<uint8_t>(e.port >> 8),
                                         static_cast<uint8_t>(e.port)};
                cmp(NFT_CMP_EQ, port, 2);
                break;
            }
            case ExprKind::kNotrack:
                push(expr("notrack"));
                break;
            case ExprKind::kVerdict: {
                nftnl_expr* x = expr("immediate");
                nftnl_expr_set_u32(x, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
                nftnl_expr_set_u32(x, NFTNL_EXPR_IMM_VERDICT,
                                   static_cast<uint32_t>(verdict_code(e.verdict.kind)));
                if (!e.verdict.chain.empty()) {
                    nftnl_expr_set_str(x, NFTNL_EXPR_IMM_CHAIN, e.verdict.chain.c_str());
                }
                push(x);
                break;
            }
        }
    }

  private:
    static uint32_t saddr_offset(IpFamily f) { return f == IpFamily::kV4 ? 12 : 8; }
    static uint32_t daddr_offset(IpFamily f) { return f == IpFamily::kV4 ? 16 : 24; }

    static nftnl_expr* expr(const char* name) { return nftnl_expr_alloc(name); }
    void push(nftnl_expr* x) { nftnl_rule_add_expr(rule_, x); }

    void meta_load(uint32_t key, uint32_t reg) {
        nftnl_expr* x = expr("meta");
        nftnl_expr_set_u32(x, NFTNL_EXPR_META_KEY, key);
        nftnl_expr_set_u32(x, NFTNL_EXPR_META_DREG, reg);
        push(x);
    }
    void meta_set_mark() {
        nftnl_expr* x = expr("meta");
        nftnl_expr_set_u32(x, NFTNL_EXPR_META_KEY, NFT_META_MARK);
        nftnl_expr_set_u32(x, NFTNL_EXPR_META_SREG, NFT_REG_1);
        push(x);
    }
    void numgen(uint32_t reg, uint32_t modulus) {
        nftnl_expr* x = expr("numgen");
        nftnl_expr_set_u32(x, NFTNL_EXPR_NG_DREG, reg);
        nftnl_expr_set_u32(x, NFTNL_EXPR_NG_MODULUS, modulus);
        nftnl_expr_set_u32(x, NFTNL_EXPR_NG_TYPE, NFT_NG_RANDOM);
        push(x);
    }
    void ct_load(uint32_t key) {
        nftnl_expr* x = expr("ct");
        nftnl_expr_set_u32(x, NFTNL_EXPR_CT_KEY, key);
        nftnl_expr_set_u32(x, NFTNL_EXPR_CT_DREG, NFT_REG_1);
        push(x);
    }
    void cmp(uint32_t op, const void* data, uint32_t len) {
        nftnl_expr* x = expr("cmp");
        nftnl_expr_set_u32(x, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
        nftnl_expr_set_u32(x, NFTNL_EXPR_CMP_OP, op);
        nftnl_expr_set(x, NFTNL_EXPR_CMP_DATA, data, len);
        push(x);
    }
    void cmp_u8(uint32_t op, uint8_t v) { cmp(op, &v, 1); }
    void cmp_u32(uint32_t op, uint32_t v) { cmp(op, &v, 4); }
    // reg1 = (reg1 & mask) ^ xor, 32 bits in host order (marks, ct bits).
    void bitwise(uint32_t mask, uint32_t x_or) {
        nftnl_expr* x = expr("bitwise");
        nftnl_expr_set_u32(x, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
        nftnl_expr_set_u32(x, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
        nftnl_expr_set_u32(x, NFTNL_EXPR_BITWISE_LEN, 4);
        nftnl_expr_set(x, NFTNL_EXPR_BITWISE_MASK, &mask, 4);
        nftnl_expr_set(x, NFTNL_EXPR_BITWISE_XOR, &x_or, 4);
        push(x);
    }
    void mask_is_set(uint32_t mask) {
        bitwise(mask, 0);
        cmp_u32(NFT_CMP_NEQ, 0);
    }
    void payload_load(uint32_t base, uint32_t offset, uint32_t len, uint32_t reg) {
        nftnl_expr* x = expr("payload");
        nftnl_expr_set_u32(x, NFTNL_EXPR_PAYLOAD_DREG, reg);
        nftnl_expr_set_u32(x, NFTNL_EXPR_PAYLOAD_BASE, base);
        nftnl_expr_set_u32(x, NFTNL_EXPR_PAYLOAD_OFFSET, offset);
        nftnl_expr_set_u32(x, NFTNL_EXPR_PAYLOAD_LEN, len);
        push(x);
    }
    void lookup(const std::string& set, uint32_t sreg, std::optional<uint32_t> dreg) {
        nftnl_expr* x = expr("lookup");
        nftnl_expr_set_u32(x, NFTNL_EXPR_LOOKUP_SREG, sreg);
        if (dreg) nftnl_expr_set_u32(x, NFTNL_EXPR_LOOKUP_DREG, *dreg);
        nftnl_expr_set_str(x, NFTNL_EXPR_LOOKUP_SET, set.c_str());
        push(x);
    }
    void immediate(uint32_t reg, const void* data, uint32_t len) {
        nftnl_expr* x = expr("immediate");
        nftnl_expr_set_u32(x, NFTNL_EXPR_IMM_DREG, reg);
        nftnl_expr_set(x, NFTNL_EXPR_IMM_DATA, data, len);
        push(x);
    }
    void nat(IpFamily f, uint32_t addr_reg, uint32_t port_reg) {
        nftnl_expr* x = expr("nat");
        nftnl_expr_set_u32(x, NFTNL_EXPR_NAT_TYPE, NFT_NAT_DNAT);
        nftnl_expr_set_u32(x, NFTNL_EXPR_NAT_FAMILY,
                           f == IpFamily::kV4 ? NFPROTO_IPV4 : NFPROTO_IPV6);
        nftnl_expr_set_u32(x, NFTNL_EXPR_NAT_REG_ADDR_MIN, addr_reg);
        nftnl_expr_set_u32(x, NFTNL_EXPR_NAT_REG_PROTO_MIN, port_reg);
        nftnl_expr_set_u32(x, NFTNL_EXPR_NAT_FLAGS, NF_NAT_RANGE_PROTO_SPECIFIED);
        push(x);
    }
    // saddr . daddr . l4proto . dport in consecutive 32-bit registers.
    void flow_key(IpFamily f) {
        const uint32_t n = addr_len(f), r0 = NFT_REG32_00;
        payload_load(NFT_PAYLOAD_NETWORK_HEADER, saddr_offset(f), n, r0);
        payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(f), n, r0 + n / 4);
        meta_load(NFT_META_L4PROTO, r0 + 2 * n / 4);
        payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, r0 + 2 * n / 4 + 1);
    }
    void address_match(const Expr& e) {
        const uint32_t bits = e.prefix.length();
        const uint32_t offset =
            e.kind == ExprKind::kSaddr ? saddr_offset(e.family) : daddr_offset(e.family);
        if (bits == 0) {
            // Everything matches; the negation matches nothing.
            if (e.negate) {
                meta_load(NFT_META_NFPROTO, NFT_REG_1);
                cmp_u8(NFT_CMP_EQ, 0);
            }
            return;
        }
        const uint32_t len = (bits + 7) / 8;
        payload_load(NFT_PAYLOAD_NETWORK_HEADER, offset, len, NFT_REG_1);
        if (bits % 8 != 0) {
            uint8_t mask[16] = {};
            for (uint32_t i = 0; i < bits; ++i)
                mask[i / 8] |= static_cast<uint8_t>(0x80 >> (i % 8));
            const uint8_t zero[16] = {};
            nftnl_expr* x = expr("bitwise");
            nftnl_expr_set_u32(x, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
            nftnl_expr_set_u32(x, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
            nftnl_expr_set_u32(x, NFTNL_EXPR_BITWISE_LEN, len);
            nftnl_expr_set(x, NFTNL_EXPR_BITWISE_MASK, mask, len);
            nftnl_expr_set(x, NFTNL_EXPR_BITWISE_XOR, zero, len);
            push(x);
        }
        cmp(e.negate ? NFT_CMP_NEQ : NFT_CMP_EQ, e.prefix.address().bytes(), len);
    }

    nftnl_rule* rule_;
};

// ---- sockets and messages ---------------------------------------------------

Error kernel_error(std::string what, int err) {
    return make_error(ErrorCode::kKernel, std::move(what), err);
}

}  // namespace

struct NetlinkSocket::Impl {
    mnl_socket* socket = nullptr;
    uint32_t port_id = 0;
    uint32_t seq = 0;
    size_t stale = 0;  // answers of earlier requests skipped, since open()

    ~Impl() {
        if (socket) mnl_socket_close(socket);
    }

    // Sends one request (a dump or a single message) and feeds every reply
    // message to `on_message`; answers left by an earlier request are skipped
    // (counted in `stale`). ENOENT from the kernel is returned as kNotFound.
    template <typename F>
    Status talk(nlmsghdr* nlh, F&& on_message) {
        if (mnl_socket_sendto(socket, nlh, nlh->nlmsg_len) < 0) {
            return kernel_error("nftables: netlink send", errno);
        }
        std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
        const bool dump = (nlh->nlmsg_flags & NLM_F_DUMP) != 0;
        NetlinkAnswers answers(nlh->nlmsg_seq);
        const std::function<void(const nlmsghdr*)> on_data = [&](const nlmsghdr* m) {
            on_message(m);
        };
        while (!answers.finished() && (dump || !answers.data_seen())) {
            const ssize_t n = mnl_socket_recvfrom(socket, buf.data(), buf.size());
            if (n < 0) return kernel_error("nftables: netlink receive", errno);
            answers.feed(buf.data(), static_cast<size_t>(n), on_data);
        }
        stale += answers.stale();
        if (answers.stale() > 0) {
            log::warn("nftables: skipped {} netlink answers of an earlier request",
                      answers.stale());
        }
        if (answers.error() == ENOENT)
            return make_error(ErrorCode::kNotFound, "nftables: not found");
        if (answers.error() != 0) return kernel_error("nftables: netlink request", answers.error());
        return {};
    }
};

NetlinkSocket::NetlinkSocket(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NetlinkSocket::~NetlinkSocket() = default;

size_t NetlinkSocket::stale_answers() const {
    return impl_->stale;
}

Result<std::unique_ptr<NetlinkSocket>> NetlinkSocket::open() {
    auto impl = std::make_unique<Impl>();
    impl->socket = mnl_socket_open(NETLINK_NETFILTER);
    if (!impl->socket) return kernel_error("nftables: open netlink socket", errno);
    if (mnl_socket_bind(impl->socket, 0, MNL_SOCKET_AUTOPID) < 0) {
        return kernel_error("nftables: bind netlink socket", errno);
    }
    impl->port_id = mnl_socket_get_portid(impl->socket);
    impl->seq = static_cast<uint32_t>(time(nullptr));
    // Replies to big dumps and error lists for big batches.
    int rcvbuf = 8 << 20;
    setsockopt(mnl_socket_get_fd(impl->socket), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    // A kernel that never answers must not hang the sync loop.
    timeval timeout{5, 0};
    setsockopt(mnl_socket_get_fd(impl->socket), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    return std::unique_ptr<NetlinkSocket>(new NetlinkSocket(std::move(impl)));
}

Result<std::optional<Model>> NetlinkSocket::read_table() {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    Model model;
    {
        nftnl_table* t = nftnl_table_alloc();
        nftnl_table_set_str(t, NFTNL_TABLE_NAME, kTableName);
        nlmsghdr* nlh =
            nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETTABLE, NFPROTO_INET, 0, ++impl_->seq);
        nftnl_table_nlmsg_build_payload(nlh, t);
        nftnl_table_free(t);
        Status s = impl_->talk(nlh, [](const nlmsghdr*) {});
        if (!s) {
            if (s.error().code == ErrorCode::kNotFound) return std::optional<Model>();
            return s.error();
        }
    }
    {
        nftnl_chain* c = nftnl_chain_alloc();
        nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, kTableName);
        nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETCHAIN, NFPROTO_INET,
                                              NLM_F_DUMP, ++impl_->seq);
        nftnl_chain_nlmsg_build_payload(nlh, c);
        nftnl_chain_free(c);
        Status s = impl_->talk(nlh, [&](const nlmsghdr* m) {
            nftnl_chain* got = nftnl_chain_alloc();
            if (nftnl_chain_nlmsg_parse(m, got) == 0 &&
                std::strcmp(nftnl_chain_get_str(got, NFTNL_CHAIN_TABLE), kTableName) == 0) {
                Chain chain;
                chain.name = nftnl_chain_get_str(got, NFTNL_CHAIN_NAME);
                if (nftnl_chain_is_set(got, NFTNL_CHAIN_HOOKNUM)) {
                    const char* type = nftnl_chain_is_set(got, NFTNL_CHAIN_TYPE)
                                           ? nftnl_chain_get_str(got, NFTNL_CHAIN_TYPE)
                                           : "filter";
                    chain.hook =
                        Hook{type, hook_name(nftnl_chain_get_u32(got, NFTNL_CHAIN_HOOKNUM)),
                             nftnl_chain_get_s32(got, NFTNL_CHAIN_PRIO)};
                }
                model.chains[chain.name] = std::move(chain);
            }
            nftnl_chain_free(got);
        });
        if (!s) return s.error();
    }
    {
        nftnl_set* set = nftnl_set_alloc();
        nftnl_set_set_str(set, NFTNL_SET_TABLE, kTableName);
        nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETSET, NFPROTO_INET, NLM_F_DUMP,
                                              ++impl_->seq);
        nftnl_set_nlmsg_build_payload(nlh, set);
        nftnl_set_free(set);
        Status s = impl_->talk(nlh, [&](const nlmsghdr* m) {
            nftnl_set* got = nftnl_set_alloc();
            if (nftnl_set_nlmsg_parse(m, got) == 0) {
                Set out;
                out.name = nftnl_set_get_str(got, NFTNL_SET_NAME);
                out.unknown = true;
                const uint32_t flags = nftnl_set_get_u32(got, NFTNL_SET_FLAGS);
                const uint32_t key_type = nftnl_set_get_u32(got, NFTNL_SET_KEY_TYPE);
                const uint32_t key_len = nftnl_set_get_u32(got, NFTNL_SET_KEY_LEN);
                const uint32_t data_type = nftnl_set_is_set(got, NFTNL_SET_DATA_TYPE)
                                               ? nftnl_set_get_u32(got, NFTNL_SET_DATA_TYPE)
                                               : 0;
                for (SetLayout layout :
                     {SetLayout::kAddrProtoPortVerdict, SetLayout::kProtoPortVerdict,
                      SetLayout::kAddrAddr, SetLayout::kAddr, SetLayout::kAffinity,
                      SetLayout::kBackendsByAddress, SetLayout::kBackendsByPort}) {
                    for (IpFamily f : {IpFamily::kV4, IpFamily::kV6}) {
                        const SetShape want = shape_of(layout, f);
                        // (protocol . port) maps carry no family in their
                        // type; the name's last digit tells.
                        if ((layout == SetLayout::kProtoPortVerdict ||
                             layout == SetLayout::kBackendsByPort) &&
                            out.name.back() != (f == IpFamily::kV4 ? '4' : '6')) {
                            continue;
                        }
                        if (out.unknown && (flags & ~NFT_SET_CONSTANT) == want.flags &&
                            key_type == want.key_type && key_len == want.key_len &&
                            data_type == want.data_type) {
                            out.layout = layout;
                            out.family = f;
                            out.unknown = false;
                        }
                    }
                }
                model.sets[out.name] = std::move(out);
            }
            nftnl_set_free(got);
        });
        if (!s) return s.error();
    }
    return std::optional<Model>(std::move(model));
}

namespace {

// Accumulates the batch's messages in libnftnl's paged buffer.
class Batch {
  public:
    explicit Batch(uint32_t seq)
        : first_seq_(seq), seq_(seq), batch_(nftnl_batch_alloc(1 << 20, 1 << 16)) {
        nftnl_batch_begin(static_cast<char*>(nftnl_batch_buffer(batch_)), seq_++);
        nftnl_batch_update(batch_);
    }
    ~Batch() { nftnl_batch_free(batch_); }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    nlmsghdr* header(uint16_t type, uint16_t flags) {
        last_seq_ = seq_;
        last_ = nftnl_nlmsg_build_hdr(static_cast<char*>(nftnl_batch_buffer(batch_)), type,
                                      NFPROTO_INET, flags, seq_++);
        return last_;
    }
    void commit() {
        nftnl_batch_update(batch_);
        ++messages_;
    }
    void end() {
        nftnl_batch_end(static_cast<char*>(nftnl_batch_buffer(batch_)), seq_++);
        nftnl_batch_update(batch_);
    }
    nftnl_batch* get() { return batch_; }
    uint32_t last_seq() const { return last_seq_; }
    // The last command message (pages never move), nullptr when none.
    nlmsghdr* last() { return last_; }
    uint32_t first_seq() const { return first_seq_; }  // the begin message's
    uint32_t next_seq() const { return seq_; }
    size_t messages() const { return messages_; }

  private:
    uint32_t first_seq_;
    uint32_t seq_;
    uint32_t last_seq_ = 0;
    nlmsghdr* last_ = nullptr;
    size_t messages_ = 0;
    nftnl_batch* batch_;
};

// `type`: NFT_MSG_NEWTABLE (created when missing) or NFT_MSG_DELTABLE.
void put_table(Batch& b, const char* table = kTableName, uint16_t type = NFT_MSG_NEWTABLE) {
    nftnl_table* t = nftnl_table_alloc();
    nftnl_table_set_str(t, NFTNL_TABLE_NAME, table);
    nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, NFPROTO_INET);
    nftnl_table_nlmsg_build_payload(b.header(type, type == NFT_MSG_NEWTABLE ? NLM_F_CREATE : 0), t);
    nftnl_table_free(t);
    b.commit();
}

void put_chain(Batch& b, uint16_t type, const std::string& name, const Hook* hook,
               const char* table = kTableName) {
    nftnl_chain* c = nftnl_chain_alloc();
    nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, table);
    nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name.c_str());
    if (hook) {
        nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook_number(hook->hook));
        nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, hook->priority);
        nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, hook->type.c_str());
        nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, NF_ACCEPT);
    }
    nftnl_chain_nlmsg_build_payload(b.header(type, type == NFT_MSG_NEWCHAIN ? NLM_F_CREATE : 0), c);
    nftnl_chain_free(c);
    b.commit();
}

void put_flush(Batch& b, const std::string& chain) {
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, kTableName);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
    nftnl_rule_nlmsg_build_payload(b.header(NFT_MSG_DELRULE, 0), r);
    nftnl_rule_free(r);
    b.commit();
}

// DELSETELEM without an element list flushes the set.
void put_set_flush(Batch& b, const std::string& set) {
    nlmsghdr* nlh = b.header(NFT_MSG_DELSETELEM, 0);
    mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_TABLE, kTableName);
    mnl_attr_put_strz(nlh, NFTA_SET_ELEM_LIST_SET, set.c_str());
    b.commit();
}

void put_rule(Batch& b, const std::string& chain, const Rule& rule,
              const char* table = kTableName) {
    nftnl_rule* r = nftnl_rule_alloc();
    nftnl_rule_set_str(r, NFTNL_RULE_TABLE, table);
    nftnl_rule_set_str(r, NFTNL_RULE_CHAIN, chain.c_str());
    nftnl_rule_set_u32(r, NFTNL_RULE_FAMILY, NFPROTO_INET);
    RuleBuilder builder(r);
    for (const Expr& e : rule) builder.add(e);
    nftnl_rule_nlmsg_build_payload(b.header(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND), r);
    nftnl_rule_free(r);
    b.commit();
}

void put_set(Batch& b, uint16_t type, const Set& set, uint32_t id) {
    nftnl_set* s = nftnl_set_alloc();
    nftnl_set_set_str(s, NFTNL_SET_TABLE, kTableName);
    nftnl_set_set_str(s, NFTNL_SET_NAME, set.name.c_str());
    nftnl_set_set_u32(s, NFTNL_SET_FAMILY, NFPROTO_INET);
    if (type == NFT_MSG_NEWSET) {
        const SetShape shape = shape_of(set.layout, set.family);
        nftnl_set_set_u32(s, NFTNL_SET_FLAGS, shape.flags);
        nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, shape.key_type);
        nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, shape.key_len);
        if (shape.flags & NFT_SET_MAP) {
            nftnl_set_set_u32(s, NFTNL_SET_DATA_TYPE, shape.data_type);
            nftnl_set_set_u32(s, NFTNL_SET_DATA_LEN, shape.data_len);
        }
        nftnl_set_set_u32(s, NFTNL_SET_ID, id);
        if (set.layout == SetLayout::kBackendsByAddress ||
            set.layout == SetLayout::kBackendsByPort) {
            const std::vector<uint8_t> udata = backend_map_udata(set.layout, set.family);
            nftnl_set_set_data(s, NFTNL_SET_USERDATA, udata.data(),
                               static_cast<uint32_t>(udata.size()));
        }
    }
    nftnl_set_nlmsg_build_payload(b.header(type, type == NFT_MSG_NEWSET ? NLM_F_CREATE : 0), s);
    nftnl_set_free(s);
    b.commit();
}

// Elements grouped per set, several per message.
void put_elements(Batch& b, uint16_t type, const std::vector<ElementId>& ids, const Model& model) {
    size_t i = 0;
    while (i < ids.size()) {
        const std::string& set_name = ids[i].first;
        auto set_it = model.sets.find(set_name);
        nftnl_set* s = nftnl_set_alloc();
        nftnl_set_set_str(s, NFTNL_SET_TABLE, kTableName);
        nftnl_set_set_str(s, NFTNL_SET_NAME, set_name.c_str());
        uint32_t count = 0;
        for (; i < ids.size() && ids[i].first == set_name && count < kElementsPerMessage; ++i) {
            const SetLayout layout =
                set_it != model.sets.end() ? set_it->second.layout : SetLayout::kAddrAddr;
            nftnl_set_elem* e = nftnl_set_elem_alloc();
            const std::vector<uint8_t> key = key_bytes(layout, ids[i].second);
            nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key.data(),
                               static_cast<uint32_t>(key.size()));
            const bool data_map =
                layout == SetLayout::kBackendsByAddress || layout == SetLayout::kBackendsByPort;
            if (type == NFT_MSG_NEWSETELEM && set_it != model.sets.end() && data_map) {
                const auto v = set_it->second.elements.find(ids[i].second);
                if (v != set_it->second.elements.end()) {
                    std::vector<uint8_t> data(v->second.address.bytes(),
                                              v->second.address.bytes() + v->second.address.size());
                    data.insert(data.end(), {static_cast<uint8_t>(v->second.port >> 8),
                                             static_cast<uint8_t>(v->second.port), 0, 0});
                    nftnl_set_elem_set(e, NFTNL_SET_ELEM_DATA, data.data(),
                                       static_cast<uint32_t>(data.size()));
                }
            } else if (type == NFT_MSG_NEWSETELEM && set_it != model.sets.end() &&
                       !is_plain_set(layout)) {
                const auto v = set_it->second.elements.find(ids[i].second);
                if (v != set_it->second.elements.end()) {
                    nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_VERDICT,
                                           static_cast<uint32_t>(verdict_code(v->second.kind)));
                    if (!v->second.chain.empty()) {
                        nftnl_set_elem_set_str(e, NFTNL_SET_ELEM_CHAIN, v->second.chain.c_str());
                    }
                }
            }
            nftnl_set_elem_add(s, e);
            ++count;
        }
        nftnl_set_elems_nlmsg_build_payload(
            b.header(type, type == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0), s);
        nftnl_set_free(s);
        b.commit();
    }
}

// Closes the batch and sends it with one sendmsg(). The kernel processes it
// inside sendmsg(): errors (one per failed message) and the closing
// acknowledgement are queued when it returns. Answers outside the batch's
// sequence numbers (left by an earlier request) are skipped and added to
// `stale`. Advances `seq`.
Status send_batch(mnl_socket* socket, uint32_t& seq, size_t& stale, Batch& b) {
    if (!b.last()) return {};
    // The last command asks for an acknowledgement: seeing it proves the
    // kernel processed the whole batch (failed messages answer anyway).
    b.last()->nlmsg_flags |= NLM_F_ACK;
    const uint32_t ack_seq = b.last_seq();
    b.end();

    const int pages = nftnl_batch_iovec_len(b.get());
    std::vector<iovec> iov(static_cast<size_t>(pages));
    nftnl_batch_iovec(b.get(), iov.data(), static_cast<uint32_t>(pages));
    size_t total = 0;
    for (const iovec& v : iov) total += v.iov_len;
    const int fd = mnl_socket_get_fd(socket);
    int sndbuf = static_cast<int>(std::min<size_t>(total + (1 << 20), 1u << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    msghdr msg{};
    msg.msg_name = &kernel;
    msg.msg_namelen = sizeof kernel;
    msg.msg_iov = iov.data();
    msg.msg_iovlen = iov.size();
    if (sendmsg(fd, &msg, 0) < 0) return kernel_error("nftables: send batch", errno);

    // Begin .. end, both included.
    NetlinkAnswers answers(b.first_seq(), b.next_seq() - 1, ack_seq);
    seq = b.next_seq();
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
    for (;;) {
        const ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            return kernel_error("nftables: receive batch result", errno);
        }
        answers.feed(buf.data(), static_cast<size_t>(n));
    }
    stale += answers.stale();
    if (answers.stale() > 0) {
        log::warn("nftables: skipped {} netlink answers of an earlier request", answers.stale());
    }
    if (answers.error() != 0) {
        return kernel_error(
            fmt::format("nftables: the kernel refused the batch of {} messages", b.messages()),
            answers.error());
    }
    if (!answers.acked()) {
        return make_error(ErrorCode::kKernel, "nftables: the batch was not acknowledged");
    }
    return {};
}

}  // namespace

Status NetlinkSocket::apply(const Delta& delta, const Model& desired) {
    Batch b(++impl_->seq);
    put_table(b);
    for (const std::string& c : delta.flush_chains) put_flush(b, c);
    for (const std::string& s : delta.flush_sets) put_set_flush(b, s);
    // Deleted elements are looked up in the old state: only the key matters.
    put_elements(b, NFT_MSG_DELSETELEM, delta.del_elements, desired);
    for (const std::string& c : delta.del_chains) put_chain(b, NFT_MSG_DELCHAIN, c, nullptr);
    for (const std::string& s : delta.del_sets) {
        Set set;
        set.name = s;
        put_set(b, NFT_MSG_DELSET, set, 0);
    }
    uint32_t set_id = 1;
    for (const std::string& s : delta.add_sets) {
        auto it = desired.sets.find(s);
        if (it != desired.sets.end()) put_set(b, NFT_MSG_NEWSET, it->second, set_id++);
    }
    for (const std::string& c : delta.add_chains) {
        auto it = desired.chains.find(c);
        if (it == desired.chains.end()) continue;
        put_chain(b, NFT_MSG_NEWCHAIN, c, it->second.hook ? &*it->second.hook : nullptr);
    }
    for (const std::string& c : delta.fill_chains) {
        auto it = desired.chains.find(c);
        if (it == desired.chains.end()) continue;
        for (const Rule& r : it->second.rules) put_rule(b, c, r);
    }
    put_elements(b, NFT_MSG_NEWSETELEM, delta.add_elements, desired);
    return send_batch(impl_->socket, impl_->seq, impl_->stale, b);
}

Result<size_t> NetlinkSocket::delete_affinity_entries(
    const std::string& map, IpFamily family,
    const std::vector<std::pair<IpAddress, uint16_t>>& endpoints) {
    struct Scan {
        IpFamily family;
        const std::vector<std::pair<IpAddress, uint16_t>>* endpoints;
        std::vector<std::vector<uint8_t>> keys;
    } scan{family, &endpoints, {}};
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE);
    nftnl_set* req = nftnl_set_alloc();
    nftnl_set_set_str(req, NFTNL_SET_TABLE, kTableName);
    nftnl_set_set_str(req, NFTNL_SET_NAME, map.c_str());
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), NFT_MSG_GETSETELEM, NFPROTO_INET, NLM_F_DUMP,
                                          ++impl_->seq);
    nftnl_set_elems_nlmsg_build_payload(nlh, req);
    nftnl_set_free(req);
    Status listed = impl_->talk(nlh, [&](const nlmsghdr* m) {
        nftnl_set* got = nftnl_set_alloc();
        if (nftnl_set_elems_nlmsg_parse(m, got) == 0) {
            nftnl_set_elem_foreach(
                got,
                [](nftnl_set_elem* e, void* data) -> int {
                    auto& sc = *static_cast<Scan*>(data);
                    uint32_t key_len = 0, data_len = 0;
                    const auto* key = static_cast<const uint8_t*>(
                        nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &key_len));
                    const auto* d = static_cast<const uint8_t*>(
                        nftnl_set_elem_get(e, NFTNL_SET_ELEM_DATA, &data_len));
                    const uint32_t n = addr_len(sc.family);
                    if (!key || !d || data_len != n + 4) return 0;
                    const IpAddress address = IpAddress::from_bytes(sc.family, d);
                    const auto port = static_cast<uint16_t>(d[n] << 8 | d[n + 1]);
                    for (const auto& [ip, p] : *sc.endpoints) {
                        if (ip == address && p == port) {
                            sc.keys.emplace_back(key, key + key_len);
                            break;
                        }
                    }
                    return 0;
                },
                &scan);
        }
        nftnl_set_free(got);
    });
    if (!listed) return listed.error();
    if (scan.keys.empty()) return size_t{0};
    Batch b(++impl_->seq);
    for (size_t i = 0; i < scan.keys.size(); i += kElementsPerMessage) {
        nftnl_set* s = nftnl_set_alloc();
        nftnl_set_set_str(s, NFTNL_SET_TABLE, kTableName);
        nftnl_set_set_str(s, NFTNL_SET_NAME, map.c_str());
        for (size_t k = i; k < scan.keys.size() && k < i + kElementsPerMessage; ++k) {
            nftnl_set_elem* e = nftnl_set_elem_alloc();
            nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, scan.keys[k].data(),
                               static_cast<uint32_t>(scan.keys[k].size()));
            nftnl_set_elem_add(s, e);
        }
        nftnl_set_elems_nlmsg_build_payload(b.header(NFT_MSG_DELSETELEM, 0), s);
        nftnl_set_free(s);
        b.commit();
    }
    if (Status s = send_batch(impl_->socket, impl_->seq, impl_->stale, b); !s) return s.error();
    return scan.keys.size();
}

Status NetlinkSocket::delete_table() {
    return delete_table(kTableName);
}

Status NetlinkSocket::delete_table(const std::string& table) {
    Batch b(++impl_->seq);
    put_table(b, table.c_str(), NFT_MSG_DELTABLE);
    Status s = send_batch(impl_->socket, impl_->seq, impl_->stale, b);
    if (!s && s.error().errno_value == ENOENT) return {};  // already gone
    return s;
}

Status NetlinkSocket::replace_table(const std::string& table, const Model& model) {
    Batch b(++impl_->seq);
    // Created first so that the delete never fails on a missing table.
    put_table(b, table.c_str());
    put_table(b, table.c_str(), NFT_MSG_DELTABLE);
    put_table(b, table.c_str());
    for (const auto& [name, chain] : model.chains) {
        put_chain(b, NFT_MSG_NEWCHAIN, name, chain.hook ? &*chain.hook : nullptr, table.c_str());
    }
    for (const auto& [name, chain] : model.chains) {
        for (const Rule& r : chain.rules) put_rule(b, name, r, table.c_str());
    }
    return send_batch(impl_->socket, impl_->seq, impl_->stale, b);
}

}  // namespace sb::rules::nftables
