#include "rules/nftables/netlink_encoding.h"

#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <cstring>
#include <iterator>
#include <span>
#include <utility>

namespace sb::rules::nftables {

namespace {

// nft's datatype numbers (concatenations: (a << 6 | b) << 6 | c ...), so that
// `nft list table` prints the elements with their proper types.
constexpr uint32_t kTypeIpv4 = 7;
constexpr uint32_t kTypeIpv6 = 8;
constexpr uint32_t kTypeInetProto = 12;
constexpr uint32_t kTypeInetService = 13;
constexpr uint32_t kTypeInteger = 4;           // numgen's value in a backend map key
constexpr uint32_t kDataVerdict = 0xffffff00;  // NFT_DATA_VERDICT

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

}  // namespace

std::vector<uint8_t> set_userdata(SetLayout layout, IpFamily family) {
    if (layout != SetLayout::kBackendsByAddress && layout != SetLayout::kBackendsByPort) return {};
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

namespace {

uint32_t concat(std::initializer_list<uint32_t> types) {
    uint32_t t = 0;
    for (uint32_t x : types) t = (t << 6) | x;
    return t;
}

uint32_t address_type(IpFamily f) {
    return f == IpFamily::kV4 ? kTypeIpv4 : kTypeIpv6;
}

}  // namespace

uint32_t address_length(IpFamily family) {
    return family == IpFamily::kV4 ? 4 : 16;
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

SetShape shape_of(SetLayout layout, IpFamily f) {
    const uint32_t a = address_type(f), n = address_length(f);
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

std::optional<SetType> layout_of(const std::string& name, uint32_t flags, uint32_t key_type,
                                 uint32_t key_len, uint32_t data_type) {
    for (SetLayout layout : {SetLayout::kAddrProtoPortVerdict, SetLayout::kProtoPortVerdict,
                             SetLayout::kAddrAddr, SetLayout::kAddr, SetLayout::kAffinity,
                             SetLayout::kBackendsByAddress, SetLayout::kBackendsByPort}) {
        for (IpFamily f : {IpFamily::kV4, IpFamily::kV6}) {
            if ((layout == SetLayout::kProtoPortVerdict || layout == SetLayout::kBackendsByPort) &&
                (name.empty() || name.back() != (f == IpFamily::kV4 ? '4' : '6'))) {
                continue;
            }
            const SetShape want = shape_of(layout, f);
            if ((flags & ~NFT_SET_CONSTANT) == want.flags && key_type == want.key_type &&
                key_len == want.key_len && data_type == want.data_type) {
                return SetType{layout, f};
            }
        }
    }
    return std::nullopt;
}

namespace {

// The fields of a layout's key, in order.
enum class KeyField : uint8_t { kA, kB, kProto, kPort, kSlot };

std::span<const KeyField> key_fields(SetLayout layout) {
    using F = KeyField;
    static constexpr F kAddrProtoPort[] = {F::kA, F::kProto, F::kPort};
    static constexpr F kProtoPort[] = {F::kProto, F::kPort};
    static constexpr F kAddrAddr[] = {F::kA, F::kB};
    static constexpr F kAddr[] = {F::kA};
    static constexpr F kFlow[] = {F::kA, F::kB, F::kProto, F::kPort};
    static constexpr F kAddrProtoPortSlot[] = {F::kA, F::kProto, F::kPort, F::kSlot};
    static constexpr F kProtoPortSlot[] = {F::kProto, F::kPort, F::kSlot};
    switch (layout) {
        case SetLayout::kAddrProtoPortVerdict:
            return kAddrProtoPort;
        case SetLayout::kProtoPortVerdict:
            return kProtoPort;
        case SetLayout::kAddrAddr:
            return kAddrAddr;
        case SetLayout::kAddr:
            return kAddr;
        case SetLayout::kAffinity:
            return kFlow;
        case SetLayout::kBackendsByAddress:
            return kAddrProtoPortSlot;
        case SetLayout::kBackendsByPort:
            return kProtoPortSlot;
    }
    return {};
}

void put_address(std::vector<uint8_t>& out, const IpAddress& a) {
    out.insert(out.end(), a.bytes(), a.bytes() + a.size());
}

void put_port(std::vector<uint8_t>& out, uint16_t port) {
    out.insert(out.end(), {static_cast<uint8_t>(port >> 8), static_cast<uint8_t>(port), 0, 0});
}

uint16_t port_at(const uint8_t* p) {
    return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

}  // namespace

std::vector<uint8_t> key_bytes(SetLayout layout, const ElementKey& k) {
    std::vector<uint8_t> out;
    for (const KeyField field : key_fields(layout)) {
        switch (field) {
            case KeyField::kA:
                put_address(out, k.a);
                break;
            case KeyField::kB:
                put_address(out, k.b);
                break;
            case KeyField::kProto:
                out.insert(out.end(), {k.proto, 0, 0, 0});
                break;
            case KeyField::kPort:
                put_port(out, k.port);
                break;
            case KeyField::kSlot: {
                const auto* p = reinterpret_cast<const uint8_t*>(&k.slot);
                out.insert(out.end(), p, p + 4);
                break;
            }
        }
    }
    return out;
}

std::optional<ElementKey> key_from_bytes(SetLayout layout, IpFamily family, const uint8_t* bytes,
                                         uint32_t length) {
    const uint32_t n = address_length(family);
    uint32_t want = 0;
    for (const KeyField field : key_fields(layout)) {
        want += field == KeyField::kA || field == KeyField::kB ? n : 4;
    }
    if (!bytes || length != want) return std::nullopt;
    ElementKey k;
    const uint8_t* p = bytes;
    for (const KeyField field : key_fields(layout)) {
        switch (field) {
            case KeyField::kA:
                k.a = IpAddress::from_bytes(family, p);
                p += n;
                break;
            case KeyField::kB:
                k.b = IpAddress::from_bytes(family, p);
                p += n;
                break;
            case KeyField::kProto:
                k.proto = p[0];
                p += 4;
                break;
            case KeyField::kPort:
                k.port = port_at(p);
                p += 4;
                break;
            case KeyField::kSlot:
                std::memcpy(&k.slot, p, 4);
                p += 4;
                break;
        }
    }
    return k;
}

std::vector<uint8_t> endpoint_bytes(const Verdict& value) {
    std::vector<uint8_t> out;
    put_address(out, value.address);
    put_port(out, value.port);
    return out;
}

std::optional<Verdict> endpoint_from_bytes(IpFamily family, const uint8_t* bytes, uint32_t length) {
    const uint32_t n = address_length(family);
    if (!bytes || length != n + 4) return std::nullopt;
    return Verdict(VerdictKind::kNone, {}, IpAddress::from_bytes(family, bytes),
                   port_at(bytes + n));
}

}  // namespace sb::rules::nftables
