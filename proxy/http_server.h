// HttpServer: the daemon's small HTTP/1.1 servers (metrics, healthz, and
// the health-check node ports), all on one Boost.Asio io thread.
//
// Handlers are plain functions returning a response, one per path;
// they run on the io thread, must be quick and thread-safe with respect to
// the state they read. An exception escaping a handler becomes a 500 and is
// logged; none escapes the event loop. Only GET and HEAD are served, and no
// request body is taken. Every listener enforces HttpLimits (the policy:
// proxy/http_session.h).
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

namespace sb::proxy {

struct HttpResponse {
    unsigned status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers;
};

// One route's handler; routes match the request path exactly (the query
// string is ignored). A route "*" answers every path no other route matches.
using HttpHandler = std::function<HttpResponse()>;
using HttpRoutes = std::map<std::string, HttpHandler>;

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
