#include "rules/iptables/iptc_entry.h"

// glibc's definitions first: the kernel headers then leave theirs out.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/xt_addrtype.h>
#include <linux/netfilter/xt_comment.h>
#include <linux/netfilter/xt_conntrack.h>
#include <linux/netfilter/xt_mark.h>
#include <linux/netfilter/xt_recent.h>
#include <linux/netfilter/xt_statistic.h>
#include <linux/netfilter/xt_tcpudp.h>
#include <linux/netfilter_ipv4/ip_tables.h>
#include <linux/netfilter_ipv4/ipt_REJECT.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netfilter_ipv6/ip6t_REJECT.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <optional>

// xt_sctp.h declares C99 inline helpers returning _Bool (C++ spells it
// bool) and a function-like macro named `bytes`.
#define _Bool bool
#include <linux/netfilter/xt_sctp.h>
#undef _Bool
#undef bytes

namespace sb::rules::iptables {

static_assert(kCtStateEstablished == XT_CONNTRACK_STATE_BIT(IP_CT_ESTABLISHED));
static_assert(kCtStateRelated == XT_CONNTRACK_STATE_BIT(IP_CT_RELATED));
static_assert(kCtStateNew == XT_CONNTRACK_STATE_BIT(IP_CT_NEW));
static_assert(kCtStateDnat == XT_CONNTRACK_STATE_DNAT);

namespace {

// Bytes of one entry's matches or target, appended in kernel layout.
class Blob {
  public:
    void append(const void* data, size_t size, size_t aligned) {
        const size_t at = bytes_.size();
        bytes_.resize(at + aligned, 0);
        std::memcpy(bytes_.data() + at, data, size);
    }
    const std::vector<uint8_t>& bytes() const { return bytes_; }

  private:
    std::vector<uint8_t> bytes_;
};

template <class Info>
void add_match(Blob& out, const char* name, uint8_t revision, const Info& info) {
    xt_entry_match m{};
    const size_t size = XT_ALIGN(sizeof(xt_entry_match)) + XT_ALIGN(sizeof(Info));
    m.u.user.match_size = static_cast<uint16_t>(size);
    std::strncpy(m.u.user.name, name, sizeof(m.u.user.name) - 1);
    m.u.user.revision = revision;
    out.append(&m, sizeof(m), XT_ALIGN(sizeof(xt_entry_match)));
    out.append(&info, sizeof(info), XT_ALIGN(sizeof(Info)));
}

template <class Info>
void add_target(Blob& out, const char* name, uint8_t revision, const Info& info) {
    xt_entry_target t{};
    const size_t size = XT_ALIGN(sizeof(xt_entry_target)) + XT_ALIGN(sizeof(Info));
    t.u.user.target_size = static_cast<uint16_t>(size);
    std::strncpy(t.u.user.name, name, sizeof(t.u.user.name) - 1);
    t.u.user.revision = revision;
    out.append(&t, sizeof(t), XT_ALIGN(sizeof(xt_entry_target)));
    out.append(&info, sizeof(info), XT_ALIGN(sizeof(Info)));
}

void copy_address(const IpAddress& address, void* out) {
    std::memcpy(out, address.bytes(), address.size());
}

// -i NAME / NAME+ as iptables encodes it: the kernel compares the name under
// the mask, which covers NAME and its NUL (exact) or NAME alone (prefix).
// Precondition: the name is 1-15 bytes (validate_interface_name).
void copy_interface(const std::string& spec, char (&name)[IFNAMSIZ],
                    unsigned char (&mask)[IFNAMSIZ]) {
    const bool prefix = !spec.empty() && spec.back() == '+';
    const size_t len = std::min(spec.size() - (prefix ? 1 : 0), size_t{IFNAMSIZ - 1});
    std::memcpy(name, spec.data(), len);
    std::memset(mask, 0xff, prefix ? len : len + 1);
}

Blob matches_of(const Rule& rule, IpFamily family) {
    Blob out;
    if (!rule.comment.empty()) {
        xt_comment_info info{};
        std::strncpy(info.comment, rule.comment.c_str(), sizeof(info.comment) - 1);
        add_match(out, "comment", 0, info);
    }
    if (rule.dport != 0) {
        if (rule.proto == IPPROTO_TCP) {
            xt_tcp info{};
            info.spts[1] = 0xffff;
            info.dpts[0] = info.dpts[1] = rule.dport;
            add_match(out, "tcp", 0, info);
        } else if (rule.proto == IPPROTO_UDP) {
            xt_udp info{};
            info.spts[1] = 0xffff;
            info.dpts[0] = info.dpts[1] = rule.dport;
            add_match(out, "udp", 0, info);
        } else {
            xt_sctp_info info{};
            info.spts[1] = 0xffff;
            info.dpts[0] = info.dpts[1] = rule.dport;
            info.flags = XT_SCTP_DEST_PORTS;
            add_match(out, "sctp", 0, info);
        }
    }
    if (rule.src_type_local || rule.dst_type_local) {
        xt_addrtype_info_v1 info{};
        if (rule.src_type_local) info.source = XT_ADDRTYPE_LOCAL;
        if (rule.dst_type_local) info.dest = XT_ADDRTYPE_LOCAL;
        add_match(out, "addrtype", 1, info);
    }
    if (rule.mark_match) {
        xt_mark_mtinfo1 info{};
        info.mark = rule.mark_value;
        info.mask = rule.mark_mask;
        info.invert = rule.mark_invert ? 1 : 0;
        add_match(out, "mark", 1, info);
    }
    if (rule.probability_denominator != 0) {
        xt_statistic_info info{};
        info.mode = XT_STATISTIC_MODE_RANDOM;
        info.u.random.probability = statistic_probability(rule.probability_denominator);
        add_match(out, "statistic", 0, info);
    }
    if (rule.recent != RecentKind::kNone) {
        xt_recent_mtinfo_v1 info{};
        std::strncpy(info.name, rule.recent_name.c_str(), sizeof(info.name) - 1);
        info.side = XT_RECENT_SOURCE;
        std::memset(&info.mask, 0xff, family == IpFamily::kV4 ? 4 : 16);
        if (rule.recent == RecentKind::kCheck) {
            info.check_set = XT_RECENT_CHECK | XT_RECENT_REAP;
            info.seconds = rule.recent_seconds;
        } else {
            info.check_set = XT_RECENT_SET;
        }
        add_match(out, "recent", 1, info);
    }
    if (rule.ctstate != 0) {
        // Revision 3, what iptables 1.8 writes for --ctstate.
        xt_conntrack_mtinfo3 info{};
        info.match_flags = XT_CONNTRACK_STATE;
        info.invert_flags = rule.ctstate_negate ? XT_CONNTRACK_STATE : 0;
        info.state_mask = rule.ctstate;
        add_match(out, "conntrack", 3, info);
    }
    return out;
}

Blob target_of(const Target& t, IpFamily family) {
    Blob out;
    auto standard = [&](const std::string& name) {
        xt_standard_target s{};
        s.target.u.user.target_size = XT_ALIGN(sizeof(xt_standard_target));
        std::strncpy(s.target.u.user.name, name.c_str(), sizeof(s.target.u.user.name) - 1);
        out.append(&s, sizeof(s), XT_ALIGN(sizeof(xt_standard_target)));
    };
    switch (t.kind) {
        case TargetKind::kJump:
            standard(t.chain);
            break;
        case TargetKind::kAccept:
            standard("ACCEPT");
            break;
        case TargetKind::kDrop:
            standard("DROP");
            break;
        case TargetKind::kReturn:
            standard("RETURN");
            break;
        case TargetKind::kDnat: {
            nf_nat_range2 info{};
            info.flags = NF_NAT_RANGE_MAP_IPS | NF_NAT_RANGE_PROTO_SPECIFIED;
            copy_address(t.address, &info.min_addr);
            copy_address(t.address, &info.max_addr);
            info.min_proto.all = info.max_proto.all = htons(t.port);
            add_target(out, "DNAT", 2, info);
            break;
        }
        case TargetKind::kMarkOr:
        case TargetKind::kMarkXor: {
            xt_mark_tginfo2 info{};
            info.mark = t.mark;
            info.mask = t.kind == TargetKind::kMarkOr ? t.mark : 0;
            add_target(out, "MARK", 2, info);
            break;
        }
        case TargetKind::kMasquerade:
            if (family == IpFamily::kV4) {
                nf_nat_ipv4_multi_range_compat info{};
                info.rangesize = 1;
                info.range[0].flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
                add_target(out, "MASQUERADE", 0, info);
            } else {
                nf_nat_range info{};
                info.flags = NF_NAT_RANGE_PROTO_RANDOM_FULLY;
                add_target(out, "MASQUERADE", 0, info);
            }
            break;
        case TargetKind::kRejectTcpReset:
        case TargetKind::kRejectPortUnreachable: {
            const bool reset = t.kind == TargetKind::kRejectTcpReset;
            if (family == IpFamily::kV4) {
                ipt_reject_info info{};
                info.with = reset ? IPT_TCP_RESET : IPT_ICMP_PORT_UNREACHABLE;
                add_target(out, "REJECT", 0, info);
            } else {
                ip6t_reject_info info{};
                info.with = reset ? IP6T_TCP_RESET : IP6T_ICMP6_PORT_UNREACH;
                add_target(out, "REJECT", 0, info);
            }
            break;
        }
    }
    return out;
}

void prefix_mask(const Prefix& prefix, uint8_t* mask) {
    const size_t size = prefix.family() == IpFamily::kV4 ? 4 : 16;
    std::memset(mask, 0, size);
    for (size_t bit = 0; bit < prefix.length(); ++bit) {
        mask[bit / 8] = static_cast<uint8_t>(mask[bit / 8] | (0x80 >> (bit % 8)));
    }
}

template <class Entry>
EntryBuffer assemble(Entry header, const Blob& matches, const Blob& target) {
    header.target_offset = static_cast<uint16_t>(sizeof(Entry) + matches.bytes().size());
    header.next_offset = static_cast<uint16_t>(header.target_offset + target.bytes().size());
    EntryBuffer out;
    out.words.resize((header.next_offset + 7) / 8, 0);
    auto* bytes = reinterpret_cast<uint8_t*>(out.words.data());
    std::memcpy(bytes, &header, sizeof(Entry));
    std::memcpy(bytes + sizeof(Entry), matches.bytes().data(), matches.bytes().size());
    std::memcpy(bytes + header.target_offset, target.bytes().data(), target.bytes().size());
    return out;
}

EntryBuffer entry_v4(const Rule& rule) {
    ipt_entry e{};
    if (rule.source) {
        copy_address(rule.source->address(), &e.ip.src);
        prefix_mask(*rule.source, reinterpret_cast<uint8_t*>(&e.ip.smsk));
        if (rule.source_negate) e.ip.invflags |= IPT_INV_SRCIP;
    }
    if (rule.destination) {
        copy_address(rule.destination->address(), &e.ip.dst);
        prefix_mask(*rule.destination, reinterpret_cast<uint8_t*>(&e.ip.dmsk));
        if (rule.destination_negate) e.ip.invflags |= IPT_INV_DSTIP;
    }
    if (!rule.in_interface.empty()) {
        copy_interface(rule.in_interface, e.ip.iniface, e.ip.iniface_mask);
    }
    e.ip.proto = rule.proto;
    return assemble(e, matches_of(rule, IpFamily::kV4), target_of(rule.target, IpFamily::kV4));
}

EntryBuffer entry_v6(const Rule& rule) {
    ip6t_entry e{};
    if (rule.source) {
        copy_address(rule.source->address(), &e.ipv6.src);
        prefix_mask(*rule.source, reinterpret_cast<uint8_t*>(&e.ipv6.smsk));
        if (rule.source_negate) e.ipv6.invflags |= IP6T_INV_SRCIP;
    }
    if (rule.destination) {
        copy_address(rule.destination->address(), &e.ipv6.dst);
        prefix_mask(*rule.destination, reinterpret_cast<uint8_t*>(&e.ipv6.dmsk));
        if (rule.destination_negate) e.ipv6.invflags |= IP6T_INV_DSTIP;
    }
    if (!rule.in_interface.empty()) {
        copy_interface(rule.in_interface, e.ipv6.iniface, e.ipv6.iniface_mask);
    }
    if (rule.proto != 0) {
        e.ipv6.proto = rule.proto;
        e.ipv6.flags |= IP6T_F_PROTO;
    }
    return assemble(e, matches_of(rule, IpFamily::kV6), target_of(rule.target, IpFamily::kV6));
}

// The length of the prefix `mask` (of `size` bytes) is; nullopt when its
// ones are not contiguous from the start.
std::optional<uint8_t> prefix_length(const uint8_t* mask, size_t size) {
    size_t length = 0;
    while (length < size * 8 && (mask[length / 8] & (0x80 >> (length % 8)))) ++length;
    for (size_t bit = length; bit < size * 8; ++bit) {
        if (mask[bit / 8] & (0x80 >> (bit % 8))) return std::nullopt;
    }
    return static_cast<uint8_t>(length);
}

// The one destination port of a tcp, udp or sctp match's data (0: a range).
uint16_t single_port(const char* name, const uint8_t* data, size_t size) {
    uint16_t ports[2] = {0, 0};
    const bool tcp = std::strcmp(name, "tcp") == 0 && size >= sizeof(xt_tcp);
    const bool udp = std::strcmp(name, "udp") == 0 && size >= sizeof(xt_udp);
    const bool sctp = std::strcmp(name, "sctp") == 0 && size >= sizeof(xt_sctp_info);
    if (tcp) std::memcpy(ports, data + offsetof(xt_tcp, dpts), sizeof(ports));
    if (udp) std::memcpy(ports, data + offsetof(xt_udp, dpts), sizeof(ports));
    if (sctp) std::memcpy(ports, data + offsetof(xt_sctp_info, dpts), sizeof(ports));
    return ports[0] == ports[1] ? ports[0] : 0;
}

template <class Entry, class Header>
DestinationMatch decode(const Entry& e, const Header& header, IpFamily family, bool inverted) {
    DestinationMatch out;
    const size_t size = family == IpFamily::kV4 ? 4 : 16;
    const auto* address = reinterpret_cast<const uint8_t*>(&header.dst);
    if (auto length = prefix_length(reinterpret_cast<const uint8_t*>(&header.dmsk), size);
        length && *length > 0) {
        out.destination = Prefix(IpAddress::from_bytes(family, address), *length);
        out.destination_negate = inverted;
    }
    // The matches lie between the header and the target.
    const auto* bytes = reinterpret_cast<const uint8_t*>(&e);
    size_t at = sizeof(Entry);
    while (at + sizeof(xt_entry_match) <= e.target_offset) {
        xt_entry_match m;
        std::memcpy(&m, bytes + at, sizeof(m));
        const size_t match_size = m.u.match_size;
        if (match_size < sizeof(xt_entry_match) || at + match_size > e.target_offset) break;
        char name[sizeof(m.u.user.name) + 1] = {};
        std::memcpy(name, m.u.user.name, sizeof(m.u.user.name));
        const size_t data = XT_ALIGN(sizeof(xt_entry_match));
        if (match_size > data) {
            if (uint16_t port = single_port(name, bytes + at + data, match_size - data)) {
                out.dport = port;
            }
        }
        at += match_size;
    }
    return out;
}

}  // namespace

EntryBuffer encode_entry(const Rule& rule, IpFamily family) {
    return family == IpFamily::kV4 ? entry_v4(rule) : entry_v6(rule);
}

DestinationMatch decode_destination_match(const void* entry, IpFamily family) {
    if (family == IpFamily::kV4) {
        const auto& e = *static_cast<const ipt_entry*>(entry);
        DestinationMatch out = decode(e, e.ip, family, e.ip.invflags & IPT_INV_DSTIP);
        out.proto = e.ip.proto;
        return out;
    }
    const auto& e = *static_cast<const ip6t_entry*>(entry);
    DestinationMatch out = decode(e, e.ipv6, family, e.ipv6.invflags & IP6T_INV_DSTIP);
    if (e.ipv6.flags & IP6T_F_PROTO) out.proto = e.ipv6.proto;
    return out;
}

}  // namespace sb::rules::iptables
