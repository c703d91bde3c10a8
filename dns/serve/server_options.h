// ServerOptions: how the DNS server listens and what it serves beside the
// zone and the engine (hosts, rate limiting, the search path's Pods). Read
// by the server and by each of its workers, UDP loops and dispatchers.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <vector>

#include "base/ip.h"
#include "dns/search_path/pod_directory.h"
#include "dns/serve/rrl.h"
#include "dns/serve/tcp_stream.h"
#include "dns/zone/hosts.h"

namespace sb::dns {

// How often a listener that could not bind tries again.
inline constexpr std::chrono::milliseconds kBindRetryInterval{2000};

struct ServerOptions {
    std::vector<HostPort> listen;
    unsigned workers = 1;
    // The first query must be complete this long after the accept, each
    // next one this long after the last (dns/serve/tcp_stream.h).
    std::chrono::milliseconds tcp_read_timeout = kTcpReadTimeout;
    std::chrono::milliseconds tcp_idle_timeout = kTcpIdleTimeout;
    size_t max_tcp_connections = 1024;  // over all workers
    std::chrono::milliseconds bind_retry_interval = kBindRetryInterval;
    // Called on the retry thread after a listener bound late (not for those
    // bound by start()), e.g. to send the forwarder's loop probes again. An
    // exception it throws is counted in coredns_panics_total (run_guarded).
    std::function<void()> on_late_bind;
    // The hosts plugin's table, asked before the zone; null: none. Must
    // outlive the server.
    const HostsHolder* hosts = nullptr;
    // --dns-rrl: limits the UDP replies (every one, forwarded included);
    // null: off. Must outlive the server.
    ResponseRateLimiter* rrl = nullptr;
    // This node's Pods by address, for the server-side search path (the
    // engine's `autopath` turns it on); null or empty: no client is known.
    // Must outlive the server.
    const PodDirectoryHolder* pods = nullptr;
};

}  // namespace sb::dns
