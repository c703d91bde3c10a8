// Node-local DNS addresses (--dns-local-address): switchboard's own
// interface carrying them and the nftables table that keeps their DNS
// traffic out of connection tracking. docs/dns.md ("Node-local addresses")
// says why each piece exists. Driven by plain addresses; touches only the
// link named kLinkName (a dummy, or a port-less bridge where the kernel has
// no dummy type) and the `inet kNotrackTable` table. Not thread-safe: one
// caller (the daemon's start and its full syncs) at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/dns_local/addresses.h"
#include "rules/nftables/model.h"

namespace sb::rules::dns_local {

inline constexpr const char* kLinkName = "sb-dns0";  // < IFNAMSIZ (16) with its NUL
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

// Makes the kernel match `addresses` (validated): the link exists (adopted
// when already there and of our kind), is up and carries exactly these
// addresses (/32, /128), and the notrack table holds render_notrack().
// Idempotent; repairs drift. Empty `addresses` is cleanup().
Status apply(const std::vector<IpAddress>& addresses);

// Deletes the link and the table; absent is success. A link named
// kLinkName of another kind is left alone and reported.
Status cleanup();

}  // namespace sb::rules::dns_local
