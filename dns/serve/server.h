// Server: the UDP and TCP sockets of the DNS service and the worker threads
// that serve them.
//
// Every worker owns one SO_REUSEPORT UDP socket and one TCP listener per
// listen address (the kernel spreads clients over the workers), an epoll
// loop, and a cache of rendered replies for zone answers (keyed by the
// lower-cased question, the EDNS state and the size limit; flushed when a
// new zone is published). Forwarded queries complete on the forwarder's
// thread and reach their worker through its inbox.
//
// An exception while serving (a query, a forwarded reply, a TCP connection,
// a UDP batch) is caught by run_guarded (base/threads/panic_guard.h): counted in
// coredns_panics_total, the query answered SERVFAIL where there is one, the
// TCP connection closed, and the thread goes on serving.
//
// Each (address, protocol) is a listener bound on its own: one that cannot
// bind (the port is taken, the address is not on this host yet) is logged
// once at warn, counted and retried every `bind_retry_interval` on the
// process's background thread (base/threads/background.h), and the others serve
// meanwhile.
//
// Thread safety: start() and stop() for one controlling thread; the zone
// holder, metrics, serving(), listeners() and bound() may be used from any
// thread.
//
// Where each job is (docs/dns.md, "Layout"): this class's listeners, binds
// and retries in server.cpp, its metrics in server_metrics.cpp; a worker's
// event loop (TCP, forwarded replies) in worker.{h,cpp}; the UDP batches in
// udp_loop.{h,cpp}; what is done with one query, whatever its socket, in
// query_dispatcher.{h,cpp}; the per-thread counters in server_stats.{h,cpp};
// what every one of them serves with in engine.h and server_options.h.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "base/threads/background.h"
#include "dns/serve/engine.h"
#include "dns/serve/server_options.h"

namespace sb::dns {

class Worker;  // dns/serve/worker.h

// One listener's state, for metrics and status pages.
struct ListenerState {
    HostPort address;  // port 0 until the kernel picked one
    bool tcp = false;
    bool serving = false;
    uint64_t bind_failures = 0;
    std::string last_error;  // why the last bind failed; empty once serving

    std::string name() const { return fmt::format("{} {}", tcp ? "tcp" : "udp", address); }
};

class Server {
  public:
    // Queries read the zone and the engine published at the time (an empty
    // holder: no upstreams, other zones REFUSED). Both holders must outlive
    // the server.
    Server(ServerOptions options, const ZoneHolder& zones, const EngineHolder& engines);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Starts the workers and binds every listener it can; the others are
    // retried (see above). A listening socket the process was given for the
    // same address (base/listeners/socket_pool.h) is adopted instead of
    // bound, and every socket is held in that pool until stop(). Error only when a worker cannot be
    // set up (epoll, eventfd): a bind failure is never one.
    Status start();
    void stop();  // idempotent; ends the retries
    // True once every listener is bound and served.
    bool serving() const;
    std::vector<ListenerState> listeners() const;
    // The listen addresses, a port 0 replaced by the kernel's pick once made
    // (whether or not each is serving yet: see listeners()).
    std::vector<HostPort> bound() const;
    void append_metrics(metrics::TextWriter& out) const;
    // CoreDNS's `server` label: "dns://:PORT" of the first listen address
    // (every listener is summed into it; docs/dns.md, "Metrics").
    std::string metrics_server_label() const;

  private:
    struct Listener {
        size_t address_index = 0;  // in options_.listen
        int type = 0;              // SOCK_DGRAM or SOCK_STREAM
        bool serving = false;      // read by any thread: guarded by mutex_
        uint64_t failures = 0;
        std::string last_error;
    };

    // Binds every listener not serving yet; true when all are serving.
    // start() and then the retry task, never both at once.
    bool bind_pending(bool late);
    Status bind_listener(size_t index);
    ListenerState state_of(const Listener& listener) const;  // mutex_ held

    ServerOptions options_;
    const ZoneHolder& zones_;
    const EngineHolder& engines_;
    std::vector<std::unique_ptr<Worker>> workers_;
    mutable std::mutex mutex_;
    std::vector<HostPort> addresses_;  // guarded by mutex_ (ports picked late)
    std::vector<Listener> listeners_;  // guarded by mutex_
    bool stopping_ = false;            // guarded by mutex_
    std::vector<int> pooled_;          // guarded by mutex_: released at stop()
    Background::Task retries_;         // until every listener is bound
    bool stopped_ = false;
};

}  // namespace sb::dns
