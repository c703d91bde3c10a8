// How the nftables model's values are spelled on netlink: verdict codes,
// hook numbers, the kernel types of switchboard's sets and the bytes of
// their element keys and values. Shared by the expression compiler, the
// table reader and the batch writer (rules/nftables/netlink.h). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "rules/nftables/model.h"

namespace sb::rules::nftables {

// Bytes of an address of `family`: 4 or 16.
uint32_t address_length(IpFamily family);

// NF_ACCEPT, NF_DROP, NFT_RETURN, NFT_JUMP, NFT_GOTO; NFT_CONTINUE for kNone.
int verdict_code(VerdictKind kind);

// "prerouting" -> NF_INET_PRE_ROUTING and back; an unknown name or number
// is postrouting, the last hook.
uint32_t hook_number(const std::string& hook);
const char* hook_name(uint32_t number);

// A set's kernel type: flags (NFT_SET_*), key type (nft's datatype numbers,
// concatenations packed 6 bits a field) and length, data type and length.
struct SetShape {
    uint32_t flags, key_type, key_len, data_type, data_len;
};
SetShape shape_of(SetLayout layout, IpFamily family);

// The layout and family a set read back from the kernel has; nullopt for a
// type switchboard does not create. (protocol . port) maps carry no family
// in their type: the name's last character ('4' or '6') tells.
struct SetType {
    SetLayout layout;
    IpFamily family;
};
std::optional<SetType> layout_of(const std::string& name, uint32_t flags, uint32_t key_type,
                                 uint32_t key_len, uint32_t data_type);

// An element key as the kernel stores it: each field of the concatenation
// padded to 4 bytes, ports in network order, the backend maps' slot in host
// order (numgen writes it so).
std::vector<uint8_t> key_bytes(SetLayout layout, const ElementKey& key);
// The inverse, for elements dumped from the kernel; nullopt when `bytes`
// does not have the layout's length.
std::optional<ElementKey> key_from_bytes(SetLayout layout, IpFamily family, const uint8_t* bytes,
                                         uint32_t length);

// The data of an element of the address-and-port maps (kAffinity and the
// backend maps): ADDR . inet_service, the port padded to 4 bytes.
std::vector<uint8_t> endpoint_bytes(const Verdict& value);
std::optional<Verdict> endpoint_from_bytes(IpFamily family, const uint8_t* bytes, uint32_t length);

// The user data nft attaches to a backend map (`typeof ... numgen random mod
// 1 : ...`), without which `nft list` cannot print the slot. Empty for the
// other layouts.
std::vector<uint8_t> set_userdata(SetLayout layout, IpFamily family);

}  // namespace sb::rules::nftables
