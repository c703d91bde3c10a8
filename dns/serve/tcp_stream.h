// TcpStream: the bytes and bookkeeping of one DNS-over-TCP connection,
// without its socket: the 2-byte framing of the queries read (RFC 1035
// 4.2.2, pipelined as RFC 7766 allows), the framed replies waiting to be
// sent, and the bounds that tell the socket's owner when to read, answer,
// write and close. Pure, so unit tests and the fuzz target drive it with
// arbitrary chunking.
//
// Bounds (docs/dns.md, "TCP limits"):
// * input: at most one largest frame (2 + 65535 bytes) is held; read_room()
//   never lets more in.
// * output: queries are answered, and input read, only while fewer than
//   kOutputBound bytes of replies are unsent, so unsent replies stay below
//   kOutputBound + one largest frame; a client that never reads stops being
//   read from.
// * forwarded queries: at most kMaxPendingForwards of one connection wait
//   for their upstream; then reading and answering pause as for the output.
// * time: the timeout runs from the connection's start (`read`, before its
//   first query) or from its last complete query (`idle`), as CoreDNS's
//   `timeouts` read and idle do; bytes of a query not yet complete never
//   reset it. It does not run while a forwarded query is pending (the
//   forwarder's own timeout ends that).
//
// Thread safety: none; one owner (a worker's event loop).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sb::dns {

// CoreDNS's `timeouts` defaults: read (to the first query) and idle
// (between queries).
inline constexpr std::chrono::milliseconds kTcpReadTimeout{3000};
inline constexpr std::chrono::milliseconds kTcpIdleTimeout{10000};

class TcpStream {
  public:
    using Clock = std::chrono::steady_clock;

    static constexpr size_t kMaxFrame = 2 + 65535;
    static constexpr size_t kOutputBound = 64 * 1024;
    static constexpr unsigned kMaxPendingForwards = 32;

    explicit TcpStream(Clock::time_point start) : last_query_(start) {}

    // How many bytes the owner may read now: 0 once the peer half-closed,
    // while replies fill the output bound or forwards their cap, or while
    // the held input is one whole largest frame.
    size_t read_room() const;
    // Appends what was read: at most read_room() bytes (the excess is not
    // taken). Invalidates the span of the last next_query().
    void received(std::string_view bytes);
    // The peer half-closed (recv returned 0): nothing more will be read.
    void received_end();
    bool input_ended() const { return input_ended_; }

    // The next complete query, when one may be answered now (the output
    // under its bound, forwards under their cap): true with `query` set to
    // it, valid until the next received(). Its arrival counts as activity
    // (`now`).
    bool next_query(Clock::time_point now, std::span<const uint8_t>& query);

    // Frames `reply` (at most 65535 bytes; a longer one is not queued and
    // false is returned) behind the replies unsent.
    bool queue_reply(std::string_view reply);
    // A query of this stream went to the upstream; forward_done() when its
    // reply (queued by the owner with queue_reply) or its failure came.
    void forwarded() { ++pending_forwards_; }
    void forward_done();
    unsigned pending_forwards() const { return pending_forwards_; }

    // The framed replies not yet sent, oldest first; sent(n) drops n of them.
    std::string_view unsent() const;
    void sent(size_t n);

    // The peer half-closed, every query it sent was answered and every
    // reply sent: the owner closes the connection.
    bool finished() const;
    // True when the connection's timeout has passed at `now`: `read`
    // before its first query, `idle` after it; never with a forward pending.
    bool timed_out(Clock::time_point now, Clock::duration read, Clock::duration idle) const;
    Clock::time_point last_query() const { return last_query_; }

  private:
    size_t held_input() const { return input_.size() - input_pos_; }
    bool paused() const;
    // A whole frame starts at input_pos_.
    bool has_frame() const;

    std::string input_;
    size_t input_pos_ = 0;  // queries before it were taken by next_query()
    std::string output_;
    size_t output_pos_ = 0;  // bytes before it were sent
    unsigned pending_forwards_ = 0;
    bool input_ended_ = false;
    bool any_query_ = false;
    Clock::time_point last_query_;  // or the start, before the first query
};

}  // namespace sb::dns
