// A non-blocking socket to one upstream with one overall deadline: what the
// blocking exchanges (upstream_exchange.h, tls_client.h) share.
//
// Thread safety: one object per exchange, used by one thread.
#pragma once

#include <chrono>
#include <optional>

#include "base/ip.h"
#include "base/result.h"

namespace sb::dns {

// A socket connected (or connecting) to `upstream`, bound first to `source`
// when given (forward's `source_address`), closed with the object.
class UpstreamConnection {
  public:
    UpstreamConnection(const HostPort& upstream, int type, std::chrono::milliseconds timeout,
                       const std::optional<IpAddress>& source);
    ~UpstreamConnection();
    UpstreamConnection(const UpstreamConnection&) = delete;
    UpstreamConnection& operator=(const UpstreamConnection&) = delete;

    // The socket could not be made, bound or connected.
    Status opened() const;
    // For a stream socket: waits until the connect completes; its error.
    Status connected() const;
    int fd() const { return fd_; }
    // Waits for `events` until the deadline; false when it passed.
    bool wait(short events) const;

  private:
    HostPort upstream_;
    std::chrono::steady_clock::time_point deadline_;
    int fd_ = -1;
    int error_ = 0;
    const char* failed_step_ = "connect";
};

}  // namespace sb::dns
