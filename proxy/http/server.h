// HttpServer: the daemon's small HTTP/1.1 servers (metrics, healthz, and
// the health-check node ports), all on one Boost.Asio io thread.
//
// Handlers are plain functions returning a response, one per path;
// they run on the io thread, must be quick and thread-safe with respect to
// the state they read. An exception escaping a handler becomes a 500 and is
// logged; none escapes the event loop. Only GET and HEAD are served, and no
// request body is taken. Every listener enforces HttpLimits (proxy/http/limits.h;
// how: proxy/http/session.h).
//
// Thread safety: listen(), close() and port() may be called from any
// thread, before or after start(). The destructor stops the io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "proxy/http/limits.h"
#include "proxy/http/routes.h"

namespace sb::proxy {

class HttpServer {
  public:
    explicit HttpServer(HttpLimits limits = {});
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds `address` now (so a bind error is reported to the caller, e.g.
    // "bind 127.0.0.1:10249: Address already in use") and serves `routes`
    // on it; an unknown path is a 404. Port 0 picks a free port. Returns a
    // listener id for close() and port(). With `v6_only` an IPv6 socket
    // takes IPv6 only (IPV6_V6ONLY), so that [::] and 0.0.0.0 can both hold
    // one port; without it [::] also accepts IPv4, as Go's listeners do.
    Result<int> listen(const HostPort& address, HttpRoutes routes, bool v6_only = false);
    // kube-proxy's behaviour without --bind-address-hard-fail: like listen(),
    // but a bind that fails is retried every `retry_period` (on the io
    // thread, once start() was called) until it succeeds or close(id).
    // `on_failure(error, attempt)` runs after each failed attempt (attempt 1
    // inside this call), `on_bound(attempts)` once the port is bound after
    // one or more failures; both may run on the io thread and must be quick.
    // port(id) is 0 until bound, and turns non-zero only after on_bound ran.
    using BindFailureHandler = std::function<void(const Error& error, unsigned attempt)>;
    using BoundHandler = std::function<void(unsigned failed_attempts)>;
    int listen_retrying(const HostPort& address, HttpRoutes routes,
                        std::chrono::milliseconds retry_period, BindFailureHandler on_failure,
                        BoundHandler on_bound);
    // Stops accepting on that listener; connections in flight finish.
    void close(int id);
    uint16_t port(int id) const;  // the bound port; 0 for an unknown id

    void start();  // the io thread
    void stop();   // idempotent

    // switchboard_http_connections_closed_total{listener, reason}, with the
    // listener's bound address as its label. Any thread.
    void append_metrics(metrics::TextWriter& out) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::proxy
