// The names Kubernetes DNS derives from an address: its reverse (PTR) name
// and its dashed label. Pure functions; below the zone, which publishes
// them, and the Corefile, whose reverse zones are written as CIDRs.
#pragma once

#include <string>
#include <string_view>

#include "base/ip.h"
#include "base/result.h"

namespace sb::dns {

// d.c.b.a.in-addr.arpa / nibbles.ip6.arpa, wire form.
std::string reverse_name(const IpAddress& address);
// The name Kubernetes DNS gives an address without a hostname: dots (IPv4) or
// colons (IPv6, RFC 5952 text) replaced by dashes.
std::string dashed_address(const IpAddress& address);
// The inverse of dashed_address, accepting any well-formed dashed form.
Result<IpAddress> parse_dashed_address(std::string_view label);

}  // namespace sb::dns
