// TcpConnections: the DNS-over-TCP connections of one server worker, on the
// worker's epoll set: accepting, reading, answering (through a
// TcpQueryHandler), writing, each socket's epoll interest, timeouts and
// eviction. The bytes and bounds of one connection are a TcpStream
// (dns/serve/tcp_stream.h); this class adds the sockets.
//
// * Interest follows the stream: EPOLLIN|EPOLLRDHUP only while the stream
//   has read room (so a half-closed peer, a full output or too many pending
//   forwards never wake the loop again), EPOLLOUT only while replies are
//   unsent. EPOLLHUP or EPOLLERR closes the connection.
// * Over `max_connections`, a new connection evicts the least recently
//   active one (activity: the start, then each complete query), counted in
//   ServerStats::tcp_evicted.
// * Accept failing for want of descriptors (EMFILE, ENFILE) or memory: one
//   reserve descriptor (/dev/null, held from construction) is closed, the
//   waiting connection accepted and closed at once (counted in
//   ServerStats::tcp_rejected), the reserve reopened; when that cannot be
//   done, the listener is taken out of the epoll set for kListenerBackoff.
//   Either way the loop does not spin on a listener it cannot serve.
//
// Thread safety: every method on the worker's event-loop thread, except
// construction and close_all() (after that thread ended).
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/ip.h"
#include "dns/serve/server_stats.h"
#include "dns/serve/tcp_stream.h"

namespace sb::dns {

// The client of a query read from a TCP connection.
struct TcpPeer {
    uint64_t connection = 0;  // the id deliver() takes for a forwarded reply
    sockaddr_storage address{};
    socklen_t address_length = 0;
    std::optional<HostPort> local;  // the connection's own address
};

class TcpQueryHandler {
  public:
    enum class Outcome { kReply, kForwarded, kNone };
    // kReply with `reply` set; kForwarded: the reply comes later through
    // TcpConnections::deliver(peer.connection, ...); kNone: no reply.
    virtual Outcome answer_tcp(std::span<const uint8_t> query, const TcpPeer& peer,
                               std::string& reply) = 0;

  protected:
    ~TcpQueryHandler() = default;
};

struct TcpLimits {
    size_t max_connections = 1024;  // this worker's share
    std::chrono::steady_clock::duration read_timeout = std::chrono::seconds(3);
    std::chrono::steady_clock::duration idle_timeout = std::chrono::seconds(10);
};

// How long a listener that could not accept for want of descriptors is
// left out of the epoll set.
inline constexpr std::chrono::milliseconds kListenerBackoff{200};

class TcpConnections {
  public:
    using Clock = std::chrono::steady_clock;

    // `epoll_fd`, `handler` and `stats` must outlive this. `stats` are the
    // event loop's (single writer).
    TcpConnections(int epoll_fd, TcpLimits limits, TcpQueryHandler& handler, ServerStats& stats);
    ~TcpConnections();
    TcpConnections(const TcpConnections&) = delete;
    TcpConnections& operator=(const TcpConnections&) = delete;

    // `listen_fd` is readable; `listen_tag` is its epoll tag (to take it
    // out of the set and back). Accepts at most a batch per call: the
    // level-triggered listener brings the loop back for the rest.
    void accept(int listen_fd, uint64_t listen_tag);
    // Connection ids are below kFirstReservedTag; tags from it up are the
    // owner's (listeners, wake-ups).
    static constexpr uint64_t kFirstReservedTag = 1ull << 60;
    void on_event(uint64_t connection, uint32_t events);
    // The reply to a query that answer_tcp forwarded; dropped when the
    // connection is gone.
    void deliver(uint64_t connection, std::string_view reply);
    void close(uint64_t connection);
    void close_all();

    // Resumes listeners whose backoff ended and, once a second, closes
    // timed-out connections. Call after each epoll_wait.
    void tick(Clock::time_point now);
    // The epoll_wait timeout (ms) that serves the next tick: at most
    // `longest`.
    int wait_ms(Clock::time_point now, int longest) const;

    size_t size() const { return connections_.size(); }

  private:
    struct Connection {
        int fd = -1;
        TcpPeer peer;
        TcpStream stream;
        uint32_t events = 0;  // the interest registered in the epoll set
        std::list<uint64_t>::iterator activity;
    };
    struct PausedListener {
        int fd = -1;
        uint64_t tag = 0;
        Clock::time_point resume;
    };

    void add(int fd, const sockaddr_storage& peer, socklen_t peer_length);
    // Accepts one waiting connection into the reserve descriptor's slot and
    // closes it; false when that could not be done.
    bool shed(int listen_fd);
    void pause(int listen_fd, uint64_t listen_tag);
    // Reads once when `readable`, answers what may be answered, writes, and
    // updates the interest; may close the connection.
    void drive(uint64_t id, Connection& conn, bool readable);
    // Sends what is unsent until the socket is full: bytes sent, or -1 when
    // the connection failed.
    ssize_t flush(Connection& conn);

    int epoll_fd_;
    TcpLimits limits_;
    TcpQueryHandler& handler_;
    ServerStats& stats_;
    int reserve_fd_ = -1;
    bool out_of_descriptors_ = false;  // logged once per episode
    std::unordered_map<uint64_t, Connection> connections_;
    std::list<uint64_t> by_activity_;  // least recently active first
    uint64_t next_id_ = 1;
    std::vector<PausedListener> paused_;
    Clock::time_point last_scan_ = Clock::now();
};

}  // namespace sb::dns
