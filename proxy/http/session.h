// One HTTP/1.1 connection of an HttpServer listener (HttpSession), and what a
// listener keeps over its connections (HttpConnections): the cap, eviction
// and the count of connections the server closed, by reason.
//
// The limits (proxy/http/server.h HttpLimits, docs/daemon.md):
// - at the cap, a new connection evicts the one that has waited longest for
//   its client (an idle keep-alive, a silent or a trickling client), so that
//   a new client is always served and old waiters pay;
// - a request's deadline runs from its first byte, and bytes that trickle in
//   do not extend it; a connection idle between requests (or silent from
//   the start) is closed after the idle timeout;
// - a header over the size or field-count limit gets 431, a request body
//   413 (no endpoint takes one), a malformed request 400; each answer is
//   followed by a lingering close (the rest of the request is read and
//   dropped, for a bounded time and number of bytes) so that the client
//   reads the answer instead of a reset.
//
// Thread safety: none; everything here runs on HttpServer's io thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <list>
#include <memory>
#include <optional>
#include <string>

#include "base/metrics.h"
#include "proxy/http/limits.h"
#include "proxy/http/routes.h"

namespace sb::proxy {

// Why the server closed a connection: the `reason` label of
// switchboard_http_connections_closed_total.
enum class HttpCloseReason { kEvicted, kIdle, kDeadline, kHeaderTooLarge, kBody, kMalformed };
const char* to_string(HttpCloseReason reason);

class HttpSession;

class HttpConnections {
  public:
    // `closed`: the counters by (listener, reason), shared by every listener
    // of one HttpServer; `listener` is this listener's label value.
    HttpConnections(HttpLimits limits, std::string listener,
                    std::shared_ptr<metrics::Labelled<metrics::Counter>> closed);

    const HttpLimits& limits() const { return limits_; }
    // Before a new connection is added: at the cap, evicts the connection
    // that has waited longest for its client.
    void make_room();
    // A session registers while open; the iterator is its ticket to leave.
    std::list<HttpSession*>::iterator add(HttpSession* session);
    void remove(std::list<HttpSession*>::iterator ticket);
    void count(HttpCloseReason reason);

  private:
    const HttpLimits limits_;
    const std::string listener_;
    const std::shared_ptr<metrics::Labelled<metrics::Counter>> closed_;
    std::list<HttpSession*> open_;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
  public:
    HttpSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<const HttpRoutes> routes,
                std::shared_ptr<HttpConnections> connections);
    ~HttpSession();
    HttpSession(const HttpSession&) = delete;
    HttpSession& operator=(const HttpSession&) = delete;

    // Registers with the listener's connections and waits for a request.
    void start();
    // Closes the socket now (pending operations end as aborted) and counts
    // `reason` when given. Idempotent.
    void close(std::optional<HttpCloseReason> reason);
    // When this connection began to wait for its client (eviction order).
    std::chrono::steady_clock::time_point waiting_since() const { return waiting_since_; }

  private:
    size_t read_room() const;  // bytes the buffer can still take, up to a chunk
    void await_request();
    void read_request();
    void on_read(boost::system::error_code ec);
    void answer();
    void on_write(boost::system::error_code ec);
    // Answers `status` with Connection: close, then lingers and closes.
    void reject(unsigned status, HttpCloseReason reason, const char* text);
    void linger(size_t dropped);

    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_;
    std::optional<boost::beast::http::request_parser<boost::beast::http::empty_body>> parser_;
    boost::beast::http::response<boost::beast::http::string_body> response_;
    const std::shared_ptr<const HttpRoutes> routes_;
    const std::shared_ptr<HttpConnections> connections_;
    std::optional<std::list<HttpSession*>::iterator> ticket_;  // set while registered
    std::chrono::steady_clock::time_point waiting_since_;
    bool closed_ = false;
};

}  // namespace sb::proxy
