// Worker: one of the DNS server's workers (dns/serve/server.h). It owns, per listen address,
// a UDP socket served by its own UdpLoop thread (dns/serve/udp_loop.h) and a TCP
// listener; one event-loop thread waits in epoll for the TCP listeners and
// connections (TcpConnections, dns/serve/tcp_connections.h) and for the inbox,
// through which the forwarder's thread hands back the replies to forwarded
// queries (UDP ones are sent from here, TCP ones delivered to their
// connection).
//
// Thread safety: open(), add_udp(), add_tcp() and stop() on the server's
// threads, never two at once (start() and then the retry thread);
// for_each_stats() from any thread; post() from any thread (the
// forwarder's). Used by the server only (dns/serve/server*.cpp).
#pragma once

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dns/serve/engine.h"
#include "dns/serve/query_dispatcher.h"
#include "dns/serve/server_options.h"
#include "dns/serve/tcp_connections.h"
#include "dns/serve/udp_loop.h"

namespace sb::dns {

// final: owned and destroyed as itself only; its bases' destructors are
// protected and not virtual.
class Worker final : public ReplySink, public TcpQueryHandler {
  public:
    // `options`, `zones` and `engines` must outlive the worker.
    Worker(const ServerOptions& options, const ZoneHolder& zones, const EngineHolder& engines);
    ~Worker();
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    // Creates the epoll set and starts the event-loop thread; sockets come
    // with add_udp() and add_tcp().
    Status open();
    // Takes a bound UDP socket and starts its serving thread. Not after stop().
    void add_udp(int fd);
    // Takes a listening TCP socket; the event loop accepts on it from now
    // on (epoll_ctl is safe while that thread waits). Not after stop().
    void add_tcp(int fd);
    // Ends every thread and closes the sockets, so a stopped server no
    // longer holds its addresses (a reload may bind them again). The inbox
    // and its eventfd stay until destruction: the forwarder may still post
    // into them. Idempotent.
    void stop();

    // Calls `f` with each serving thread's counters (the event loop's, then
    // each UDP loop's).
    template <typename F>
    void for_each_stats(F f) const {
        std::lock_guard lock(sockets_mutex_);
        f(tcp_dispatcher_.stats());
        for (const auto& loop : udp_loops_) f(loop->stats());
    }

    // ReplySink, on the forwarder's thread: queues the reply and wakes the
    // event loop.
    void post(ClientRef client, std::string reply) override;

  private:
    static constexpr uint64_t kWakeTag = 1ull << 62;
    static constexpr uint64_t kListenTag = 3ull << 60;
    static constexpr uint64_t kTagMask = 0xfull << 60;
    static_assert(kListenTag >= TcpConnections::kFirstReservedTag);

    void wake();
    void add_fd(int fd, uint32_t events, uint64_t tag);
    void drain_inbox();
    // TcpQueryHandler: a query read from a connection, on the event loop.
    Outcome answer_tcp(std::span<const uint8_t> query, const TcpPeer& peer,
                       std::string& reply) override;
    void run();  // the event loop

    const ServerOptions& options_;
    const ZoneHolder& zones_;
    const EngineHolder& engines_;

    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    // Sockets are added by the server's retry thread while the worker runs.
    mutable std::mutex sockets_mutex_;
    std::vector<std::unique_ptr<UdpLoop>> udp_loops_;  // guarded by sockets_mutex_
    std::vector<int> tcp_fds_;  // guarded by sockets_mutex_; closed at the end
    std::thread thread_;
    std::atomic<bool> stopping_{false};

    // Event-loop thread state.
    QueryDispatcher tcp_dispatcher_;
    std::unique_ptr<TcpConnections> tcp_;  // made by open()

    std::mutex inbox_mutex_;
    std::deque<std::pair<ClientRef, std::string>> inbox_;
};

}  // namespace sb::dns
