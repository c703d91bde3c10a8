// Blocking exchanges of one query with one upstream, each bounded by one
// overall deadline: the forwarder's TCP queries, the health checker's
// probes and `switchboard lookup`'s questions use them.
//
// Thread safety: free functions, any thread; each call owns its socket.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "base/ip.h"
#include "base/result.h"
#include "dns/wire/wire.h"

namespace sb::dns {

// `packet` with its two-byte length in front (RFC 1035 4.2.2), as TCP and
// TLS (RFC 7858) carry it.
std::string tcp_framed(const std::string& packet);

// `packet` over TCP (length-prefixed); the parsed reply. `source`: the
// local address to send from (forward's source_address).
Result<Message> tcp_exchange(const HostPort& upstream, const std::string& packet,
                             std::chrono::milliseconds timeout,
                             const std::optional<IpAddress>& source = std::nullopt);

// `packet` over a connected UDP socket, so an ICMP port unreachable fails
// it at once; the first parsed reply (QR=1) with the packet's ID.
Result<Message> udp_exchange(const HostPort& upstream, const std::string& packet,
                             std::chrono::milliseconds timeout,
                             const std::optional<IpAddress>& source = std::nullopt);

// One question (RD set, EDNS, a random ID) over UDP, again over TCP when the
// reply is truncated, as a stub resolver asks it; each exchange bounded by
// `timeout`. kUnavailable without a reply, or for a reply to another
// question.
Result<Message> ask_question(const HostPort& server, const Question& question,
                             std::chrono::milliseconds timeout);

}  // namespace sb::dns
