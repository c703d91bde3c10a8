// CoreDNS's `loadbalance` (round_robin) on a parsed reply: in each section,
// the A and AAAA records, and the MX records, in a random order. A section
// that is one address type is shuffled in place; otherwise it becomes
// CNAMEs, other records, addresses, MX, as CoreDNS orders it. Replies with
// an rcode other than NOERROR, and zone transfers, are left alone.
//
// The server applies it to replies it does not render itself (forwarded
// and cached ones); zone replies are shuffled in their wire form
// (WriteResult's shuffle fields). Thread safety: pure.
#pragma once

#include <cstdint>

#include "dns/wire/wire.h"

namespace sb::dns {

// `seed`: any value; different seeds give (most likely) different orders.
void load_balance(Message& reply, uint64_t seed);

}  // namespace sb::dns
