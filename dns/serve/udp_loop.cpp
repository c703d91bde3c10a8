#include "dns/serve/udp_loop.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/listeners/socket_pool.h"
#include "base/socket_address.h"
#include "base/threads/panic_guard.h"
#include "base/threads/thread_name.h"

namespace sb::dns {

UdpLoop::UdpLoop(int fd, const ServerOptions& options, const ZoneHolder& zones,
                 const EngineHolder& engines, ReplySink& sink)
    : fd_(fd), options_(options), dispatcher_(options, zones, engines, sink), buffers_(kUdpBatch) {
    int buffer = 4 << 20;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
    // The thread blocks in recvmmsg; the timeout bounds how long stop()
    // waits should the shutdown() wake-up be missed.
    timeval timeout{0, 500000};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
    int flags = ::fcntl(fd_, F_GETFL);
    ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
        local_ = from_socket_address(bound);
    }
}

UdpLoop::~UdpLoop() {
    shut_down();
    join();
    close_socket();
}

void UdpLoop::start() {
    thread_ = start_named_thread("sb-dns-udp", [this] {
        while (!stopping_.load(std::memory_order_relaxed)) {
            run_guarded("dns udp worker", [this] { serve_batch(); });
        }
    });
}

void UdpLoop::shut_down() {
    stopping_.store(true, std::memory_order_relaxed);
    // A socket another process serves too (a rolling update) is left alone:
    // shutdown() would end its reads there as well; the receive timeout
    // ends this thread's.
    if (fd_ >= 0 && !listeners::SocketPool::process().shared()) ::shutdown(fd_, SHUT_RD);
}

void UdpLoop::join() {
    if (thread_.joinable()) thread_.join();
}

void UdpLoop::close_socket() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void UdpLoop::serve_batch() {
    size_t received = receive();
    if (received == 0) return;  // timeout, signal or shutdown: check stopping_
    auto start = std::chrono::steady_clock::now();
    dispatcher_.refresh_zone();
    size_t replies = handle(received, start);
    // One clock read per batch: every reply of the batch took the batch's
    // time from receipt to send.
    dispatcher_.stats().duration.record(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), replies,
        false);
    send(replies);
}

size_t UdpLoop::receive() {
    for (size_t i = 0; i < kUdpBatch; ++i) {
        in_iov_[i] = {buffers_[i].data(), kUdpBuffer};
        in_[i].msg_hdr = {};
        in_[i].msg_hdr.msg_iov = &in_iov_[i];
        in_[i].msg_hdr.msg_iovlen = 1;
        in_[i].msg_hdr.msg_name = &from_[i];
        in_[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
    }
    int received = ::recvmmsg(fd_, in_.data(), kUdpBatch, MSG_WAITFORONE, nullptr);
    return received > 0 ? static_cast<size_t>(received) : 0;
}

size_t UdpLoop::handle(size_t received, std::chrono::steady_clock::time_point start) {
    size_t ready = 0;
    for (size_t i = 0; i < received; ++i) {
        ClientRef client;
        client.proto = kUdp;
        client.udp_fd = fd_;
        client.address = from_[i];
        client.address_length = in_[i].msg_hdr.msg_namelen;
        client.local = local_;
        std::string& reply = replies_[ready];
        size_t length = std::min<size_t>(in_[i].msg_len, kUdpBuffer);
        if (dispatcher_.handle(buffers_[i].data(), length, kUdp, client, reply) !=
                QueryDispatcher::Outcome::kReply ||
            !udp_reply_admitted(options_.rrl, client, reply, start)) {
            continue;
        }
        if (dispatcher_.logging()) {
            dispatcher_.log_reply(buffers_[i].data(), length, kUdp, client, reply, start);
        }
        out_iov_[ready] = {reply.data(), reply.size()};
        out_[ready].msg_hdr = {};
        out_[ready].msg_hdr.msg_iov = &out_iov_[ready];
        out_[ready].msg_hdr.msg_iovlen = 1;
        out_[ready].msg_hdr.msg_name = &from_[i];
        out_[ready].msg_hdr.msg_namelen = in_[i].msg_hdr.msg_namelen;
        ++ready;
    }
    return ready;
}

// A message the kernel refuses (EINVAL for a reply to port 0, EPERM or
// EACCES from a firewall, no route) is skipped, counted as dropped, and the
// rest of the batch still goes; a full socket buffer (EAGAIN) drops what is
// left, as UDP does.
void UdpLoop::send(size_t replies) {
    ServerStats& stats = dispatcher_.stats();
    size_t sent = 0;
    while (sent < replies) {
        int n = ::sendmmsg(fd_, out_.data() + sent, static_cast<unsigned>(replies - sent),
                           MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            bump_single_writer(stats.dropped, replies - sent);
            return;
        }
        bump_single_writer(stats.dropped);  // out_[sent] failed alone
        ++sent;
    }
}

bool udp_reply_admitted(ResponseRateLimiter* rrl, const ClientRef& client, std::string& reply,
                        std::chrono::steady_clock::time_point now) {
    return !rrl || rrl->admit(client.address, reply, now) != ResponseRateLimiter::Verdict::kDrop;
}

void send_forwarded_udp(ResponseRateLimiter* rrl, const ClientRef& client, std::string& reply) {
    if (!udp_reply_admitted(rrl, client, reply, std::chrono::steady_clock::now())) return;
    ::sendto(client.udp_fd, reply.data(), reply.size(), MSG_DONTWAIT,
             reinterpret_cast<const sockaddr*>(&client.address), client.address_length);
}

}  // namespace sb::dns
