#include "proxy/http/session.h"

#include <algorithm>
#include <exception>
#include <iterator>

#include "base/log.h"
#include "proxy/http/routing.h"

namespace sb::proxy {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using boost::system::error_code;

// Bytes read at a time while waiting for a request, and while lingering.
constexpr size_t kReadChunk = 4096;

// A request the parser refused (as opposed to a socket error or a client
// that went away mid-request).
bool is_malformed(const error_code& ec) {
    return ec.category() == error_code(http::error::bad_method).category() &&
           ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

const char* to_string(HttpCloseReason reason) {
    switch (reason) {
        case HttpCloseReason::kEvicted:
            return "evicted";
        case HttpCloseReason::kIdle:
            return "idle";
        case HttpCloseReason::kDeadline:
            return "deadline";
        case HttpCloseReason::kHeaderTooLarge:
            return "header_too_large";
        case HttpCloseReason::kBody:
            return "body";
        case HttpCloseReason::kMalformed:
            return "malformed";
    }
    return "unknown";
}

HttpConnections::HttpConnections(HttpLimits limits, std::string listener,
                                 std::shared_ptr<metrics::Labelled<metrics::Counter>> closed)
    : limits_(limits), listener_(std::move(listener)), closed_(std::move(closed)) {}

void HttpConnections::make_room() {
    // A linear scan: the cap is small, and this runs once per accept.
    while (!open_.empty() && open_.size() >= limits_.max_connections) {
        auto oldest = std::min_element(open_.begin(), open_.end(), [](auto* a, auto* b) {
            return a->waiting_since() < b->waiting_since();
        });
        (*oldest)->close(HttpCloseReason::kEvicted);  // removes it from open_
    }
}

std::list<HttpSession*>::iterator HttpConnections::add(HttpSession* session) {
    return open_.insert(open_.end(), session);
}

void HttpConnections::remove(std::list<HttpSession*>::iterator ticket) {
    open_.erase(ticket);
}

void HttpConnections::count(HttpCloseReason reason) {
    closed_->with({listener_, to_string(reason)}).inc();
}

HttpSession::HttpSession(asio::ip::tcp::socket socket, std::shared_ptr<const HttpRoutes> routes,
                         std::shared_ptr<HttpConnections> connections)
    : stream_(std::move(socket)),
      // Room for one header at its limit and a pipelined request's start.
      buffer_(2 * size_t{connections->limits().max_header_bytes}),
      routes_(std::move(routes)),
      connections_(std::move(connections)) {}

HttpSession::~HttpSession() {
    if (ticket_) connections_->remove(*ticket_);
}

void HttpSession::start() {
    connections_->make_room();
    ticket_ = connections_->add(this);
    await_request();
}

void HttpSession::close(std::optional<HttpCloseReason> reason) {
    if (closed_) return;
    closed_ = true;
    if (ticket_) {
        connections_->remove(*ticket_);
        ticket_.reset();
    }
    if (reason) connections_->count(*reason);
    error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    stream_.close();
}

size_t HttpSession::read_room() const {
    // prepare() throws beyond the buffer's maximum; callers read into an
    // empty buffer, so this is kReadChunk or the whole (small) maximum.
    return std::min(kReadChunk, buffer_.max_size() - buffer_.size());
}

void HttpSession::await_request() {
    waiting_since_ = std::chrono::steady_clock::now();
    // A pipelined request is already (partly) here.
    if (buffer_.size() > 0) {
        read_request();
        return;
    }
    stream_.expires_after(connections_->limits().idle_timeout);
    stream_.async_read_some(
        buffer_.prepare(read_room()), [self = shared_from_this()](error_code ec, size_t bytes) {
            if (self->closed_) return;
            if (ec) {
                self->close(ec == beast::error::timeout
                                ? std::optional<HttpCloseReason>(HttpCloseReason::kIdle)
                                : std::nullopt);
                return;
            }
            self->buffer_.commit(bytes);
            self->read_request();
        });
}

void HttpSession::read_request() {
    // The deadline is set once, at the request's first byte: the reads
    // below keep it, however few bytes each brings.
    stream_.expires_after(connections_->limits().request_deadline);
    parser_.emplace();
    parser_->header_limit(connections_->limits().max_header_bytes);
    parser_->body_limit(0);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](error_code ec, size_t) { self->on_read(ec); });
}

void HttpSession::on_read(error_code ec) {
    if (closed_) return;
    if (ec == http::error::header_limit) {
        reject(431, HttpCloseReason::kHeaderTooLarge, "request header too large\n");
    } else if (ec == http::error::body_limit || ec == http::error::unexpected_body) {
        reject(413, HttpCloseReason::kBody, "request body not accepted\n");
    } else if (ec == beast::error::timeout) {
        close(HttpCloseReason::kDeadline);
    } else if (ec && is_malformed(ec)) {
        reject(400, HttpCloseReason::kMalformed, "malformed request\n");
    } else if (ec) {
        close(std::nullopt);  // the client went away
    } else if (static_cast<size_t>(std::distance(parser_->get().begin(), parser_->get().end())) >
               connections_->limits().max_header_fields) {
        reject(431, HttpCloseReason::kHeaderTooLarge, "too many request header fields\n");
    } else {
        answer();
    }
}

void HttpSession::answer() {
    response_ = route_request(*routes_, parser_->get());
    // A client that does not read the answer is bounded by the same
    // deadline as one that does not send its request.
    waiting_since_ = std::chrono::steady_clock::now();
    stream_.expires_after(connections_->limits().request_deadline);
    http::async_write(stream_, response_, [self = shared_from_this()](error_code write_ec, size_t) {
        self->on_write(write_ec);
    });
}

void HttpSession::on_write(error_code ec) {
    if (closed_) return;
    if (ec) {
        close(ec == beast::error::timeout
                  ? std::optional<HttpCloseReason>(HttpCloseReason::kDeadline)
                  : std::nullopt);
        return;
    }
    if (response_.keep_alive()) {
        await_request();
        return;
    }
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
    linger(0);
}

void HttpSession::reject(unsigned status, HttpCloseReason reason, const char* text) {
    connections_->count(reason);
    response_ = {};
    response_.version(11);
    response_.result(status);
    response_.keep_alive(false);
    response_.set("X-Content-Type-Options", "nosniff");
    response_.set(http::field::content_type, "text/plain; charset=utf-8");
    response_.body() = text;
    response_.prepare_payload();
    stream_.expires_after(connections_->limits().request_deadline);
    http::async_write(stream_, response_, [self = shared_from_this()](error_code ec, size_t) {
        if (self->closed_) return;
        if (ec) {
            self->close(std::nullopt);
            return;
        }
        self->stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
        self->linger(0);
    });
}

void HttpSession::linger(size_t dropped) {
    // Closing with unread input would send a reset, which can destroy the
    // answer before the client reads it: drop what still comes, within the
    // deadline set for the answer and a byte budget, then close.
    if (dropped > connections_->limits().max_linger_bytes) {
        close(std::nullopt);
        return;
    }
    buffer_.consume(buffer_.size());
    stream_.async_read_some(buffer_.prepare(read_room()),
                            [self = shared_from_this(), dropped](error_code ec, size_t bytes) {
                                if (self->closed_) return;
                                if (ec) {
                                    self->close(std::nullopt);
                                    return;
                                }
                                self->linger(dropped + bytes);
                            });
}

}  // namespace sb::proxy
