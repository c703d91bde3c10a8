// A model Rule (model.h) as the x_tables entry the kernel stores: an
// ipt_entry / ip6t_entry header (addresses, masks, interface, protocol),
// its matches and its target, each in kernel layout, as iptables itself
// encodes them (the kernel test compares the two byte for byte through
// iptables-legacy-save); and back, the destination part of an entry read
// from the kernel. Used by the libiptc edge (iptc.cpp). Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "rules/iptables/model.h"

namespace sb::rules::iptables {

// One entry in 8-byte aligned storage, as libiptc reads it.
struct EntryBuffer {
    std::vector<uint64_t> words;
    // Entry: ipt_entry for IPv4, ip6t_entry for IPv6 (the family encoded).
    template <class Entry>
    const Entry* as() const {
        return reinterpret_cast<const Entry*>(words.data());
    }
};

// Precondition: the rule's addresses are of `family`, its interface name
// valid (validate_interface_name), its comment at most 255 bytes.
EntryBuffer encode_entry(const Rule& rule, IpFamily family);

// What an entry of `family` matches on the destination (all but the target,
// which libiptc names): the header's destination and protocol, and the port
// of its tcp, udp or sctp match when that match names one port. The inverse
// of encode_entry for those fields; a destination mask that is not a prefix
// reads as none. Precondition: `entry` is a whole entry whose offsets the
// kernel checked (libiptc's rules are); matches are read only within them.
DestinationMatch decode_destination_match(const void* entry, IpFamily family);

}  // namespace sb::rules::iptables
