// Blocking exchanges of one query with one upstream, each bounded by one
// overall deadline: the forwarder's TCP queries and the health checker's
// probes use them.
//
// Thread safety: free functions, any thread; each call owns its socket.
#pragma once

#include <chrono>
#include <string>

#include "base/ip.h"
#include "base/result.h"
#include "dns/wire.h"

namespace sb::dns {

// `packet` over TCP (length-prefixed, RFC 1035 4.2.2); the parsed reply.
Result<Message> tcp_exchange(const HostPort& upstream, const std::string& packet,
                             std::chrono::milliseconds timeout);

// `packet` over a connected UDP socket, so an ICMP port unreachable fails
// it at once; the first parsed reply (QR=1) with the packet's ID.
Result<Message> udp_exchange(const HostPort& upstream, const std::string& packet,
                             std::chrono::milliseconds timeout);

}  // namespace sb::dns
