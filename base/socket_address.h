// Conversions between HostPort and the socket API's addresses, and the
// socket setup the DNS server, its forwarder and its rate limiter share
// (several floors of dns/, so it sits below them all).

#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include "base/ip.h"
#include "base/result.h"

namespace sb {

class SocketAddress {
  public:
    int family() const { return storage_.ss_family; }
    const ::sockaddr* sockaddr() const { return reinterpret_cast<const ::sockaddr*>(&storage_); }
    socklen_t length() const {
        return family() == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    }
    sockaddr_storage& storage() { return storage_; }

  private:
    sockaddr_storage storage_{};
};

SocketAddress to_socket_address(const HostPort& address);
HostPort from_socket_address(const sockaddr_storage& address);

// A non-blocking socket bound to `address` with SO_REUSEPORT (so that every
// worker has its own socket on the same address). Listens when TCP.
Result<int> bind_socket(const HostPort& address, int type);

}  // namespace sb
