// UdpLoop: one UDP socket of a worker and the thread that serves it,
// blocked in recvmmsg: under load a batch of up to kUdpBatch queries costs
// one receive and one send system call, with no epoll round. A batch is
// three steps, as Knot's udp_api_t splits them: receive (recvmmsg), handle
// (each query through the loop's QueryDispatcher, replies admitted by
// --dns-rrl) and send (sendmmsg).
//
// Replies to forwarded queries do not come back here: the forwarder posts
// them to the worker (ReplySink), whose event loop sends them with
// send_forwarded_udp() through the same admission.
//
// Thread safety: construction, start(), shut_down(), join() and
// close_socket() by the worker (under its sockets mutex), in that order;
// stats() from any thread (atomics).
// Private to the server (dns/server*.cpp).
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dns/serve/query_dispatcher.h"

namespace sb::dns {

// Queries received per recvmmsg.
inline constexpr size_t kUdpBatch = 64;
// Bytes kept of each datagram received.
inline constexpr size_t kUdpBuffer = 4096;

class UdpLoop {
  public:
    // Takes `fd`, a bound UDP socket (bind_socket): makes it blocking, with
    // a large receive buffer and a receive timeout. `options`, `zones`,
    // `engines` and `sink` must outlive the loop.
    UdpLoop(int fd, const ServerOptions& options, const ZoneHolder& zones,
            const EngineHolder& engines, ReplySink& sink);
    ~UdpLoop();
    UdpLoop(const UdpLoop&) = delete;
    UdpLoop& operator=(const UdpLoop&) = delete;

    void start();
    // Ends the receive the thread is blocked in; the thread stops after its
    // batch.
    void shut_down();
    void join();
    // Closes the socket (after join()), so the address is free again.
    void close_socket();

    const ServerStats& stats() const { return dispatcher_.stats(); }

  private:
    // Batch steps; serve_batch() runs them, run_guarded around the whole
    // (QueryDispatcher::handle guards each query).
    void serve_batch();
    size_t receive();  // datagrams received, 0 on timeout, signal or shutdown
    size_t handle(size_t received, std::chrono::steady_clock::time_point start);  // replies
    void send(size_t replies);

    int fd_;
    const ServerOptions& options_;
    std::optional<HostPort> local_;  // the bound address, for the log's {local}
    QueryDispatcher dispatcher_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;

    // The batch's buffers, used by the loop's thread only.
    std::vector<std::array<uint8_t, kUdpBuffer>> buffers_;  // kUdpBatch of them
    std::array<std::string, kUdpBatch> replies_;
    std::array<mmsghdr, kUdpBatch> in_{};
    std::array<iovec, kUdpBatch> in_iov_{};
    std::array<sockaddr_storage, kUdpBatch> from_{};
    std::array<mmsghdr, kUdpBatch> out_{};
    std::array<iovec, kUdpBatch> out_iov_{};
};

// --dns-rrl's admission of a UDP reply (`rrl` null: off): false when it is
// not to be sent; a slipped reply is cut to its question in place.
bool udp_reply_admitted(ResponseRateLimiter* rrl, const ClientRef& client, std::string& reply,
                        std::chrono::steady_clock::time_point now);

// Sends the reply to a forwarded UDP query from the socket it came in on,
// when --dns-rrl admits it; a reply the socket cannot take now is dropped,
// as UDP does.
void send_forwarded_udp(ResponseRateLimiter* rrl, const ClientRef& client, std::string& reply);

}  // namespace sb::dns
