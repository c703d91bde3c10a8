// Node-local DNS addresses (--dns-local-address): switchboard's own
// interface carrying them and the nftables table that keeps their DNS
// traffic out of connection tracking. docs/dns.md ("Node-local addresses")
// says why each piece exists. Driven by plain addresses; touches only the
// link named kLinkName (a dummy, or a port-less bridge where the kernel has
// no dummy type) and the `inet kNotrackTable` table (notrack.h). Not thread-safe: one
// caller (the daemon's start and its full syncs) at a time.
#pragma once

#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/dns_local/addresses.h"
#include "rules/dns_local/notrack.h"

namespace sb::rules::dns_local {

inline constexpr const char* kLinkName = "sb-dns0";  // < IFNAMSIZ (16) with its NUL

// Makes the kernel match `addresses` (validated): the link exists (adopted
// when already there and of our kind), is up and carries exactly these
// addresses (/32, /128), and the notrack table holds render_notrack().
// Idempotent; repairs drift. Empty `addresses` is cleanup().
Status apply(const std::vector<IpAddress>& addresses);

// Deletes the link and the table; absent is success. A link named
// kLinkName of another kind is left alone and reported.
Status cleanup();

}  // namespace sb::rules::dns_local
