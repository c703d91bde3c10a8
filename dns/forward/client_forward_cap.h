// The per-client cap on outstanding forwarded queries (issue 10 point 3):
// one Pod (one source address) cannot fill the forwarder's table and
// starve the others. A query merged into another's upstream query counts
// too: each costs a callback and a reply to send.
//
// Thread safety: none; the forwarder's event loop owns it.
#pragma once

#include <cstdint>
#include <map>

#include "base/ip.h"

namespace sb::dns {

class ClientForwardCap {
  public:
    // `limit` 0: no cap.
    explicit ClientForwardCap(uint32_t limit) : limit_(limit) {}

    // True (and counted) when `client` has fewer than `limit` outstanding.
    bool acquire(const IpAddress& client);
    // One of `client`'s acquired queries completed.
    void release(const IpAddress& client);
    // Clients with at least one outstanding query (the table's size).
    size_t clients() const { return outstanding_.size(); }

  private:
    uint32_t limit_;
    std::map<IpAddress, uint32_t> outstanding_;  // only clients above 0
};

}  // namespace sb::dns
