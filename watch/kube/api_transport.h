// The API server as the reflector sees it (watch/kube/reflector.h): "GET this
// path, give me the status and the body" for a LIST page, and "open this
// watch path, then give me its lines one by one until it ends" for a WATCH.
// Connections, TLS, authentication, HTTP framing and line splitting are the
// transport's business; the reflector decides what to request and what an
// answer means. Production: BeastTransport (beast_transport.h); tests: the
// scripted fake in tests/unit/watch/kube/fake_api.h.
//
// Thread safety: none. One transport serves one resource's reflector loop,
// one request at a time, on the event loop that runs that loop.
#pragma once

// boost/asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace sb::watch::kube {

template <typename T>
using awaitable = boost::asio::awaitable<T>;

// How a request ended.
struct Reply {
    // The HTTP status; 0 when no answer came (then `sent` and `failure`).
    unsigned status = 0;
    std::string retry_after;  // the Retry-After header, "" when absent
    // get(): the whole body. open_watch(): the body of an answer other than
    // 200 ("" when it could not be read); empty for 200.
    std::string body;
    // status 0: true when the request went out and its answer did not
    // arrive (failure: the I/O error, "end of stream"); false when no request
    // reached the server (failure: the whole reason, "cannot connect: ...").
    bool sent = false;
    std::string failure;
};

// How a watch stream ended.
struct StreamEnd {
    enum class How {
        kEnded,    // the server finished the body
        kStopped,  // the line handler asked to stop
        kStalled,  // nothing ended it within the deadline given to open_watch
        kLost,     // the connection failed (failure: the I/O error)
    };
    How how = How::kEnded;
    std::string failure;
    bool cut = false;  // kEnded: the body ended inside a line (the stream was cut)
};

struct WatchLineHandlers {
    // One line of the body (one JSON event, without the newline; blank lines
    // are skipped). false: stop reading (the lines after it are not given).
    std::function<bool(std::string_view line)> line;
    // `count` more lines were dropped for exceeding the line size limit.
    std::function<void(size_t count)> oversized;
};

class ApiTransport {
  public:
    virtual ~ApiTransport() = default;

    // GET `target` (a path with its query, below the server's base path).
    virtual awaitable<Reply> get(const std::string& target) = 0;
    // Sends a watch GET for `target` and reads the answer's header; on 200
    // the body is left for read_watch(). `deadline`: how long the whole
    // stream may take before read_watch() reports kStalled.
    virtual awaitable<Reply> open_watch(const std::string& target,
                                        std::chrono::seconds deadline) = 0;
    // Reads the body of the watch open_watch() answered 200, calling
    // `handlers` as lines arrive, until the stream ends.
    virtual awaitable<StreamEnd> read_watch(const WatchLineHandlers& handlers) = 0;
    // Drops the connection (the next request opens a new one): after a
    // failure or 410 Gone, nothing on the old connection is trusted.
    virtual void disconnect() = 0;
};

}  // namespace sb::watch::kube
