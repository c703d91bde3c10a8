#include "rules/nftables/netlink_expr.h"

#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

#include "rules/nftables/netlink_encoding.h"

namespace sb::rules::nftables {

namespace {

// The registers of one concatenation, as nft lays them out: the fields of
// `a . b . c` go into consecutive 32-bit registers from NFT_REG32_00, each
// taking its length rounded up to 4 bytes, and a lookup or dynset reads the
// whole key from the first. A map's value (`addr . port`) comes back the
// same way. The only place register numbers are computed; a single value
// (a comparison, a plain set's key) uses NFT_REG_1, as nft does.
class RegisterRun {
  public:
    uint32_t first() const { return NFT_REG32_00; }
    // The register of the next field of `bytes` bytes.
    uint32_t take(uint32_t bytes) {
        const uint32_t reg = next_;
        next_ += (bytes + 3) / 4;
        return reg;
    }

  private:
    uint32_t next_ = NFT_REG32_00;
};

// The fields switchboard's keys are made of.
enum class Field : uint8_t {
    kSaddr,
    kDaddr,
    kL4proto,
    kDport,
    kSlot,  // numgen random mod N: the backend maps' endpoint index
};

constexpr std::initializer_list<Field> kFlowKey = {Field::kSaddr, Field::kDaddr, Field::kL4proto,
                                                   Field::kDport};

uint32_t saddr_offset(IpFamily f) {
    return f == IpFamily::kV4 ? 12 : 8;
}
uint32_t daddr_offset(IpFamily f) {
    return f == IpFamily::kV4 ? 16 : 24;
}

class RuleCompiler {
  public:
    explicit RuleCompiler(nftnl_rule* rule) : rule_(rule) {}

    // One expression kind per case; the kinds that take more than a couple
    // of expressions have a method of their own below.
    void add(const Expr& e) {
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
            case ExprKind::kFibSaddrLocal:
                fib_local(e);
                break;
            case ExprKind::kIifname:
            case ExprKind::kIifnamePrefix:
                iifname(e);
                break;
            case ExprKind::kMarkSetOr:
            case ExprKind::kMarkSetXor:
            case ExprKind::kMarkUnset:
                mark(e);
                break;
            case ExprKind::kNumgen:
                numgen(NFT_REG_1, e.value);
                cmp_u32(NFT_CMP_EQ, 0);
                break;
            case ExprKind::kVmapDaddrProtoPort:
            case ExprKind::kVmapProtoPort:
            case ExprKind::kSetDaddr:
            case ExprKind::kSetSaddrDaddr:
                set_lookup(e);
                break;
            case ExprKind::kAffinityUpdate:
                affinity_update(e);
                break;
            case ExprKind::kAffinityDnat:
            case ExprKind::kDnat:
            case ExprKind::kDnatByAddress:
            case ExprKind::kDnatByPort:
                dnat(e);
                break;
            case ExprKind::kMasquerade:
                push(expr("masq"));
                break;
            case ExprKind::kRejectTcpReset:
            case ExprKind::kRejectPortUnreachable:
                reject(e);
                break;
            case ExprKind::kThDport:
            case ExprKind::kThSport:
                th_port(e);
                break;
            case ExprKind::kNotrack:
                push(expr("notrack"));
                break;
            case ExprKind::kVerdict:
                verdict(e);
                break;
        }
    }

  private:
    // `fib daddr|saddr type local`.
    void fib_local(const Expr& e) {
        nftnl_expr* x = expr("fib");
        nftnl_expr_set_u32(x, NFTNL_EXPR_FIB_DREG, NFT_REG_1);
        nftnl_expr_set_u32(x, NFTNL_EXPR_FIB_RESULT, NFT_FIB_RESULT_ADDRTYPE);
        nftnl_expr_set_u32(
            x, NFTNL_EXPR_FIB_FLAGS,
            e.kind == ExprKind::kFibDaddrLocal ? NFTA_FIB_F_DADDR : NFTA_FIB_F_SADDR);
        push(x);
        cmp_u32(NFT_CMP_EQ, RTN_LOCAL);
    }

    // As nft compiles `iifname "NAME"`: the name NUL-padded to IFNAMSIZ;
    // `iifname "NAME*"`: the prefix bytes only.
    void iifname(const Expr& e) {
        meta_load(NFT_META_IIFNAME, NFT_REG_1);
        char name[IFNAMSIZ] = {};
        const size_t len = std::min(e.name.size(), sizeof(name) - 1);
        std::memcpy(name, e.name.data(), len);
        cmp(NFT_CMP_EQ, name,
            e.kind == ExprKind::kIifname ? sizeof(name) : static_cast<uint32_t>(len));
    }

    // Sets bits of the packet mark (or), flips them (xor), or matches a
    // packet whose `value` bits are unset.
    void mark(const Expr& e) {
        meta_load(NFT_META_MARK, NFT_REG_1);
        switch (e.kind) {
            case ExprKind::kMarkSetOr:
                bitwise(~e.value, e.value);
                meta_set_mark();
                break;
            case ExprKind::kMarkSetXor:
                bitwise(0xffffffff, e.value);
                meta_set_mark();
                break;
            default:  // kMarkUnset
                bitwise(e.value, 0);
                cmp_u32(NFT_CMP_EQ, 0);
                break;
        }
    }

    // A verdict map's lookup (its verdict decides) or a plain set's (a
    // match).
    void set_lookup(const Expr& e) {
        RegisterRun key;
        switch (e.kind) {
            case ExprKind::kVmapDaddrProtoPort:
                load(key, {Field::kDaddr, Field::kL4proto, Field::kDport}, e);
                lookup(e.name, key.first(), NFT_REG_VERDICT);
                break;
            case ExprKind::kVmapProtoPort:
                load(key, {Field::kL4proto, Field::kDport}, e);
                lookup(e.name, key.first(), NFT_REG_VERDICT);
                break;
            case ExprKind::kSetDaddr:
                payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(e.family),
                             address_length(e.family), NFT_REG_1);
                lookup(e.name, NFT_REG_1, std::nullopt);
                break;
            default:  // kSetSaddrDaddr
                load(key, {Field::kSaddr, Field::kDaddr}, e);
                lookup(e.name, key.first(), std::nullopt);
                break;
        }
    }

    // Records the flow's chosen endpoint in the affinity set; the value (the
    // endpoint) follows the key.
    void affinity_update(const Expr& e) {
        const uint32_t n = address_length(e.family);
        RegisterRun run;
        load(run, kFlowKey, e);
        const uint32_t address = run.take(n);
        immediate(address, e.prefix.address().bytes(), n);
        immediate_port(run.take(2), e.port);
        nftnl_expr* x = expr("dynset");
        nftnl_expr_set_u32(x, NFTNL_EXPR_DYNSET_SREG_KEY, run.first());
        nftnl_expr_set_u32(x, NFTNL_EXPR_DYNSET_SREG_DATA, address);
        nftnl_expr_set_u32(x, NFTNL_EXPR_DYNSET_OP, NFT_DYNSET_OP_UPDATE);
        nftnl_expr_set_u64(x, NFTNL_EXPR_DYNSET_TIMEOUT, uint64_t{e.value} * 1000);
        nftnl_expr_set_str(x, NFTNL_EXPR_DYNSET_SET_NAME, e.name.c_str());
        push(x);
    }

    // DNAT to a fixed endpoint, or to the one a map gives for the key.
    void dnat(const Expr& e) {
        RegisterRun key;
        switch (e.kind) {
            case ExprKind::kDnat: {
                const uint32_t n = address_length(e.family);
                const uint32_t address = key.take(n);
                immediate(address, e.prefix.address().bytes(), n);
                const uint32_t port = key.take(2);
                immediate_port(port, e.port);
                nat(e.family, address, port);
                return;
            }
            case ExprKind::kAffinityDnat:
                load(key, kFlowKey, e);
                break;
            case ExprKind::kDnatByAddress:
                load(key, {Field::kDaddr, Field::kL4proto, Field::kDport, Field::kSlot}, e);
                break;
            default:  // kDnatByPort
                load(key, {Field::kL4proto, Field::kDport, Field::kSlot}, e);
                break;
        }
        lookup_and_dnat(e, key);
    }

    void reject(const Expr& e) {
        nftnl_expr* x = expr("reject");
        const bool tcp = e.kind == ExprKind::kRejectTcpReset;
        nftnl_expr_set_u32(x, NFTNL_EXPR_REJECT_TYPE,
                           tcp ? NFT_REJECT_TCP_RST : NFT_REJECT_ICMPX_UNREACH);
        nftnl_expr_set_u8(x, NFTNL_EXPR_REJECT_CODE, tcp ? 0 : NFT_REJECT_ICMPX_PORT_UNREACH);
        push(x);
    }

    // `th dport|sport PORT`.
    void th_port(const Expr& e) {
        payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, e.kind == ExprKind::kThSport ? 0 : 2, 2,
                     NFT_REG_1);
        const uint8_t port[2] = {static_cast<uint8_t>(e.port >> 8), static_cast<uint8_t>(e.port)};
        cmp(NFT_CMP_EQ, port, 2);
    }

    void verdict(const Expr& e) {
        nftnl_expr* x = expr("immediate");
        nftnl_expr_set_u32(x, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
        nftnl_expr_set_u32(x, NFTNL_EXPR_IMM_VERDICT,
                           static_cast<uint32_t>(verdict_code(e.verdict.kind)));
        if (!e.verdict.chain.empty()) {
            nftnl_expr_set_str(x, NFTNL_EXPR_IMM_CHAIN, e.verdict.chain.c_str());
        }
        push(x);
    }

    static nftnl_expr* expr(const char* name) { return nftnl_expr_alloc(name); }
    void push(nftnl_expr* x) { nftnl_rule_add_expr(rule_, x); }

    // Loads `fields` of the packet into the next registers of `run`.
    void load(RegisterRun& run, std::initializer_list<Field> fields, const Expr& e) {
        const uint32_t n = address_length(e.family);
        for (const Field field : fields) {
            switch (field) {
                case Field::kSaddr:
                    payload_load(NFT_PAYLOAD_NETWORK_HEADER, saddr_offset(e.family), n,
                                 run.take(n));
                    break;
                case Field::kDaddr:
                    payload_load(NFT_PAYLOAD_NETWORK_HEADER, daddr_offset(e.family), n,
                                 run.take(n));
                    break;
                case Field::kL4proto:
                    meta_load(NFT_META_L4PROTO, run.take(1));
                    break;
                case Field::kDport:
                    payload_load(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, run.take(2));
                    break;
                case Field::kSlot:
                    numgen(run.take(4), e.value);
                    break;
            }
        }
    }

    // Looks the key in `key` up in the map e.name, whose value (addr . port)
    // replaces it, and DNATs to that value.
    void lookup_and_dnat(const Expr& e, const RegisterRun& key) {
        lookup(e.name, key.first(), key.first());
        RegisterRun value;
        const uint32_t address = value.take(address_length(e.family));
        const uint32_t port = value.take(2);
        nat(e.family, address, port);
    }

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
    void immediate_port(uint32_t reg, uint16_t port) {
        const uint8_t bytes[2] = {static_cast<uint8_t>(port >> 8), static_cast<uint8_t>(port)};
        immediate(reg, bytes, 2);
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

}  // namespace

void add_expressions(nftnl_rule* out, const Rule& rule) {
    RuleCompiler compiler(out);
    for (const Expr& e : rule) compiler.add(e);
}

}  // namespace sb::rules::nftables
