// The notrack table of the node-local DNS addresses (dns_local.h says why
// it exists): its names, its rendering (pure) and its writing. Not
// thread-safe: one caller (dns_local's apply and cleanup) at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/nftables/model.h"

namespace sb::rules::dns_local {

inline constexpr const char* kNotrackTable = "switchboard-dns";
inline constexpr const char* kNotrackPrerouting = "notrack-prerouting";
inline constexpr const char* kNotrackOutput = "notrack-output";
inline constexpr int32_t kRawPriority = -300;  // before conntrack (-200)

// The notrack table for `addresses` (pure): chains at raw priority in the
// prerouting and output hooks; per address and per UDP/TCP one rule for
// queries (daddr, dport 53) and one for answers (saddr, sport 53) in each,
// so neither direction of a query, from a Pod or from the node, gets a
// conntrack entry. No addresses: an empty model (no table is wanted).
nftables::Model render_notrack(const std::vector<IpAddress>& addresses);

// The kernel's `inet kNotrackTable` becomes render_notrack(addresses), in
// one transaction; empty `addresses` deletes the table (absent is success).
Status program_notrack(const std::vector<IpAddress>& addresses);

}  // namespace sb::rules::dns_local
