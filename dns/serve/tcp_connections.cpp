#include "dns/serve/tcp_connections.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "base/socket_address.h"

namespace sb::dns {

namespace {

// Connections accepted per readable event of a listener.
constexpr int kAcceptBatch = 64;
// Bytes read per readable event of a connection.
constexpr size_t kReadChunk = 16384;
// How often timeouts are checked: a connection closes within its timeout
// plus this.
constexpr std::chrono::seconds kScanInterval{1};

int open_reserve() {
    return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

bool out_of_resources(int error) {
    return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

}  // namespace

TcpConnections::TcpConnections(int epoll_fd, TcpLimits limits, TcpQueryHandler& handler,
                               ServerStats& stats)
    : epoll_fd_(epoll_fd),
      limits_(limits),
      handler_(handler),
      stats_(stats),
      reserve_fd_(open_reserve()) {
    limits_.max_connections = std::max<size_t>(1, limits_.max_connections);
}

TcpConnections::~TcpConnections() {
    close_all();
    if (reserve_fd_ >= 0) ::close(reserve_fd_);
}

void TcpConnections::accept(int listen_fd, uint64_t listen_tag) {
    for (int i = 0; i < kAcceptBatch; ++i) {
        sockaddr_storage peer{};
        socklen_t peer_length = sizeof(peer);
        int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &peer_length,
                           SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            if (out_of_descriptors_) log::info("dns: TCP accept has descriptors again");
            out_of_descriptors_ = false;
            add(fd, peer, peer_length);
            continue;
        }
        int error = errno;
        if (error == EINTR || error == ECONNABORTED) continue;
        if (error == EAGAIN || error == EWOULDBLOCK) return;
        if (!out_of_descriptors_) {
            log::warn("dns: TCP accept: {}; closing new connections until it passes",
                      std::strerror(error));
            out_of_descriptors_ = true;
        }
        if (out_of_resources(error) && shed(listen_fd)) continue;
        pause(listen_fd, listen_tag);
        return;
    }
}

bool TcpConnections::shed(int listen_fd) {
    if (reserve_fd_ < 0) reserve_fd_ = open_reserve();
    if (reserve_fd_ < 0) return false;
    ::close(reserve_fd_);
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
        bump_single_writer(stats_.tcp_rejected);  // counted before the peer can see the close
        ::close(fd);
    }
    // Another thread may take the slot first: then the next shed reopens.
    reserve_fd_ = open_reserve();
    return fd >= 0;
}

void TcpConnections::pause(int listen_fd, uint64_t listen_tag) {
    epoll_event event{};
    event.data.u64 = listen_tag;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd, &event);
    paused_.push_back(PausedListener{listen_fd, listen_tag, Clock::now() + kListenerBackoff});
}

void TcpConnections::add(int fd, const sockaddr_storage& peer, socklen_t peer_length) {
    if (connections_.size() >= limits_.max_connections) {
        bump_single_writer(stats_.tcp_evicted);  // counted before the peer can see the close
        close(by_activity_.front());
    }
    uint64_t id = next_id_++;
    Connection& conn =
        connections_.try_emplace(id, Connection{fd, {}, TcpStream(Clock::now()), 0, {}})
            .first->second;
    conn.peer.connection = id;
    conn.peer.address = peer;
    conn.peer.address_length = peer_length;
    sockaddr_storage own{};
    socklen_t own_length = sizeof(own);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&own), &own_length) == 0) {
        conn.peer.local = from_socket_address(own);
    }
    conn.activity = by_activity_.insert(by_activity_.end(), id);
    conn.events = EPOLLIN | EPOLLRDHUP;
    epoll_event event{};
    event.events = conn.events;
    event.data.u64 = id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
}

void TcpConnections::close(uint64_t id) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    ::close(it->second.fd);  // also removes it from the epoll set
    by_activity_.erase(it->second.activity);
    connections_.erase(it);
}

void TcpConnections::close_all() {
    for (auto& [id, conn] : connections_) ::close(conn.fd);
    connections_.clear();
    by_activity_.clear();
}

void TcpConnections::on_event(uint64_t id, uint32_t events) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    if (events & (EPOLLERR | EPOLLHUP)) {
        // Reset, or shut down both ways: nothing more can be sent.
        close(id);
        return;
    }
    drive(id, it->second, (events & (EPOLLIN | EPOLLRDHUP)) != 0);
}

void TcpConnections::deliver(uint64_t id, std::string_view reply) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;  // the client went away
    it->second.stream.forward_done();
    it->second.stream.queue_reply(reply);
    drive(id, it->second, false);
}

ssize_t TcpConnections::flush(Connection& conn) {
    ssize_t total = 0;
    while (!conn.stream.unsent().empty()) {
        std::string_view unsent = conn.stream.unsent();
        ssize_t n = ::send(conn.fd, unsent.data(), unsent.size(), MSG_NOSIGNAL);
        if (n > 0) {
            conn.stream.sent(static_cast<size_t>(n));
            total += n;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        return -1;
    }
    return total;
}

void TcpConnections::drive(uint64_t id, Connection& conn, bool readable) {
    TcpStream& stream = conn.stream;
    if (size_t room = stream.read_room(); readable && room > 0) {
        char buffer[kReadChunk];
        ssize_t n = ::recv(conn.fd, buffer, std::min(room, sizeof(buffer)), 0);
        if (n > 0) {
            stream.received({buffer, static_cast<size_t>(n)});
        } else if (n == 0) {
            stream.received_end();
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            close(id);
            return;
        }
    }
    // Answer and send until a round sends nothing: each round answers what
    // the output bound allows, so this ends within the held input.
    std::string reply;
    while (true) {
        std::span<const uint8_t> query;
        while (stream.next_query(Clock::now(), query)) {
            by_activity_.splice(by_activity_.end(), by_activity_, conn.activity);
            TcpQueryHandler::Outcome outcome = handler_.answer_tcp(query, conn.peer, reply);
            if (outcome == TcpQueryHandler::Outcome::kReply) {
                stream.queue_reply(reply);
            } else if (outcome == TcpQueryHandler::Outcome::kForwarded) {
                stream.forwarded();
            }
        }
        ssize_t sent = flush(conn);
        if (sent < 0) {
            close(id);
            return;
        }
        if (sent == 0) break;
    }
    if (stream.finished()) {
        close(id);
        return;
    }
    uint32_t events = (stream.read_room() > 0 ? EPOLLIN | EPOLLRDHUP : 0u) |
                      (stream.unsent().empty() ? 0u : EPOLLOUT);
    if (events != conn.events) {
        conn.events = events;
        epoll_event event{};
        event.events = events;
        event.data.u64 = id;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, conn.fd, &event);
    }
}

void TcpConnections::tick(Clock::time_point now) {
    for (auto it = paused_.begin(); it != paused_.end();) {
        if (now < it->resume) {
            ++it;
            continue;
        }
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u64 = it->tag;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, it->fd, &event);
        it = paused_.erase(it);
    }
    if (now - last_scan_ < kScanInterval) return;
    last_scan_ = now;
    std::vector<uint64_t> expired;
    for (const auto& [id, conn] : connections_) {
        if (conn.stream.timed_out(now, limits_.read_timeout, limits_.idle_timeout)) {
            expired.push_back(id);
        }
    }
    for (uint64_t id : expired) {
        bump_single_writer(stats_.tcp_timeouts);  // counted before the peer can see the close
        close(id);
    }
}

int TcpConnections::wait_ms(Clock::time_point now, int longest) const {
    auto wait = std::chrono::milliseconds(longest);
    for (const PausedListener& listener : paused_) {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(listener.resume - now);
        wait = std::clamp(left, std::chrono::milliseconds(0), wait);
    }
    return static_cast<int>(wait.count());
}

}  // namespace sb::dns
