// HttpLimits: what one client may cost one of the daemon's HTTP listeners;
// the server hands them to every session it accepts.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace sb::proxy {

// What one client may cost a listener (docs/daemon.md, "HTTP listeners").
struct HttpLimits {
    // Open connections per listener; at the cap a new one evicts the
    // connection that has waited longest for its client.
    size_t max_connections = 64;
    // A request's line and header fields: 431 over either limit.
    uint32_t max_header_bytes = 8192;
    size_t max_header_fields = 100;
    // From a request's first byte to its last; a trickle does not extend it.
    // Also bounds writing the answer, and the lingering close after an error.
    std::chrono::milliseconds request_deadline{std::chrono::seconds(10)};
    // Between requests on a keep-alive connection, and before the first.
    std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
    // Bytes of a rejected request read and dropped before closing.
    size_t max_linger_bytes = 4 << 20;
};

}  // namespace sb::proxy
