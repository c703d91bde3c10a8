// The node-local DNS addresses' constants and the flag's rules: pure, so
// the option table (and its fuzz target) use them without the kernel code
// of dns_local.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules::dns_local {

inline constexpr uint16_t kDnsPort = 53;
inline constexpr size_t kMaxAddresses = 8;

// The flag's rules: at most kMaxAddresses, no duplicate, none unspecified,
// loopback, multicast or IPv6 link-local (those cannot be a node-wide
// service address). The error is one line naming the bad address.
Status validate_addresses(const std::vector<IpAddress>& addresses);

}  // namespace sb::rules::dns_local
