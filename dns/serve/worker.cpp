#include "dns/serve/worker.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/threads/panic_guard.h"
#include "base/threads/thread_name.h"

namespace sb::dns {

Worker::Worker(const ServerOptions& options, const ZoneHolder& zones, const EngineHolder& engines)
    : options_(options),
      zones_(zones),
      engines_(engines),
      tcp_dispatcher_(options, zones, engines, *this) {}

Worker::~Worker() {
    stop();
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status Worker::open() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) {
        return make_error(ErrorCode::kIo, "epoll/eventfd", errno);
    }
    add_fd(wake_fd_, EPOLLIN, kWakeTag);
    TcpLimits limits;
    limits.max_connections = options_.max_tcp_connections / std::max<size_t>(1, options_.workers);
    limits.read_timeout = options_.tcp_read_timeout;
    limits.idle_timeout = options_.tcp_idle_timeout;
    tcp_ = std::make_unique<TcpConnections>(epoll_fd_, limits, *this, tcp_dispatcher_.stats());
    thread_ = start_named_thread("sb-dns-worker", [this] { run(); });
    return {};
}

void Worker::add_udp(int fd) {
    std::lock_guard lock(sockets_mutex_);
    udp_loops_.push_back(std::make_unique<UdpLoop>(fd, options_, zones_, engines_, *this));
    udp_loops_.back()->start();
}

void Worker::add_tcp(int fd) {
    std::lock_guard lock(sockets_mutex_);
    tcp_fds_.push_back(fd);
    add_fd(fd, EPOLLIN, kListenTag | static_cast<uint64_t>(fd));
}

void Worker::stop() {
    if (stopping_.exchange(true)) return;
    wake();
    if (thread_.joinable()) thread_.join();
    std::lock_guard lock(sockets_mutex_);
    for (auto& loop : udp_loops_) loop->shut_down();
    for (auto& loop : udp_loops_) loop->join();
    if (tcp_) tcp_->close_all();
    for (auto& loop : udp_loops_) loop->close_socket();
    for (int fd : tcp_fds_) ::close(fd);
    tcp_fds_.clear();
}

void Worker::post(ClientRef client, std::string reply) {
    {
        std::lock_guard lock(inbox_mutex_);
        inbox_.emplace_back(std::move(client), std::move(reply));
    }
    wake();
}

void Worker::wake() {
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
}

void Worker::add_fd(int fd, uint32_t events, uint64_t tag) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = tag;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
}

void Worker::drain_inbox() {
    std::deque<std::pair<ClientRef, std::string>> items;
    {
        std::lock_guard lock(inbox_mutex_);
        items.swap(inbox_);
    }
    for (auto& [client, bytes] : items) {
        if (client.proto == kUdp) {
            send_forwarded_udp(options_.rrl, client, bytes);
            continue;
        }
        tcp_->deliver(client.connection, bytes);
    }
}

TcpQueryHandler::Outcome Worker::answer_tcp(std::span<const uint8_t> query, const TcpPeer& peer,
                                            std::string& reply) {
    auto start = std::chrono::steady_clock::now();
    ClientRef client;
    client.proto = kTcp;
    client.connection = peer.connection;
    client.address = peer.address;
    client.address_length = peer.address_length;
    client.local = peer.local;
    QueryDispatcher::Outcome outcome =
        tcp_dispatcher_.handle(query.data(), query.size(), kTcp, client, reply);
    if (outcome == QueryDispatcher::Outcome::kForwarded) return Outcome::kForwarded;
    if (outcome != QueryDispatcher::Outcome::kReply) return Outcome::kNone;
    if (tcp_dispatcher_.logging()) {
        tcp_dispatcher_.log_reply(query.data(), query.size(), kTcp, client, reply, start);
    }
    tcp_dispatcher_.stats().duration.record(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1, false);
    return Outcome::kReply;
}

void Worker::run() {
    std::array<epoll_event, 64> events;
    while (!stopping_.load(std::memory_order_relaxed)) {
        int n = ::epoll_wait(epoll_fd_, events.data(), events.size(),
                             tcp_->wait_ms(std::chrono::steady_clock::now(), 1000));
        tcp_dispatcher_.refresh_zone();
        for (int i = 0; i < n; ++i) {
            uint64_t tag = events[i].data.u64;
            if (tag == kWakeTag) {
                uint64_t value = 0;
                (void)!::read(wake_fd_, &value, sizeof(value));
                run_guarded("dns worker inbox", [this] { drain_inbox(); });
            } else if ((tag & kTagMask) == kListenTag) {
                run_guarded("dns tcp accept",
                            [this, tag] { tcp_->accept(static_cast<int>(tag & ~kTagMask), tag); });
            } else if (!run_guarded("dns tcp connection", [this, tag, &events, i] {
                           tcp_->on_event(tag, events[i].events);
                       })) {
                // Its buffered frames would throw again on the next event.
                tcp_->close(tag);
            }
        }
        run_guarded("dns tcp timers", [this] { tcp_->tick(std::chrono::steady_clock::now()); });
    }
}

}  // namespace sb::dns
