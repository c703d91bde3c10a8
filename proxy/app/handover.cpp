#include "proxy/app/handover.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "base/threads/panic_guard.h"
#include "base/threads/thread_name.h"

namespace sb::proxy {

namespace {

using listeners::NamedFd;

Result<sockaddr_un> socket_path(const std::string& folder) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    const std::string path = folder + "/handover.sock";
    if (path.size() >= sizeof(address.sun_path)) {
        return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: path too long", path));
    }
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

void set_timeouts(int fd, std::chrono::milliseconds timeout) {
    timeval value{static_cast<time_t>(timeout.count() / 1000),
                  static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, sizeof(value));
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, sizeof(value));
}

}  // namespace

Result<KernelLock> KernelLock::open(const std::string& folder) {
    const std::string path = folder + "/kernel.lock";
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(ErrorCode::kIo, path, errno);
    return KernelLock(fd);
}

KernelLock::~KernelLock() {
    if (fd_ >= 0) ::close(fd_);
}

bool KernelLock::try_lock() {
    return ::flock(fd_, LOCK_EX | LOCK_NB) == 0;
}

bool KernelLock::lock_within(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!try_lock()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        ::usleep(100'000);
    }
    return true;
}

void KernelLock::unlock() {
    ::flock(fd_, LOCK_UN);
}

Result<std::vector<NamedFd>> request_handover(const std::string& folder,
                                              std::chrono::milliseconds timeout) {
    auto address = socket_path(folder);
    if (!address) return address.error();
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(ErrorCode::kIo, "socket for the hand-over", errno);
    set_timeouts(fd, timeout);
    auto result = [&]() -> Result<std::vector<NamedFd>> {
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0) {
            return make_error(ErrorCode::kUnavailable,
                              fmt::format("{}: no daemon answers", address->sun_path), errno);
        }
        if (auto sent = listeners::send_fds(fd, "handover", {}); !sent) return sent.error();
        auto answer = listeners::receive_fds(fd);
        if (!answer) return answer.error();
        if (answer->kind != "sockets") {
            for (const auto& named : answer->fds) ::close(named.fd);
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("hand-over: an answer of kind {}", answer->kind));
        }
        return std::move(answer->fds);
    }();
    ::close(fd);
    return result;
}

HandoverServer::~HandoverServer() {
    stop();
}

Status HandoverServer::start(const std::string& folder, Give give, Sent sent) {
    auto address = socket_path(folder);
    if (!address) return address.error();
    path_ = address->sun_path;
    give_ = std::move(give);
    sent_ = std::move(sent);
    listener_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listener_ < 0) return make_error(ErrorCode::kIo, "socket for the hand-over", errno);
    ::unlink(path_.c_str());  // a dead daemon's; the lock says none serves it
    if (::bind(listener_, reinterpret_cast<const sockaddr*>(&*address), sizeof(*address)) != 0 ||
        ::chmod(path_.c_str(), 0600) != 0 || ::listen(listener_, 4) != 0) {
        const int saved = errno;
        ::close(listener_);
        listener_ = -1;
        return make_error(ErrorCode::kIo, fmt::format("hand-over socket {}", path_), saved);
    }
    thread_ = start_named_thread("sb-handover", [this] { serve(); });
    return {};
}

void HandoverServer::stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
    if (listener_ >= 0) ::close(listener_);
    listener_ = -1;
}

void HandoverServer::serve() {
    bool done = false;
    while (!done && !stopping_) {
        pollfd ready{listener_, POLLIN, 0};
        if (::poll(&ready, 1, 200) <= 0) continue;
        const int connection = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) continue;
        run_guarded("hand-over", [&] { done = answer(connection); });
        ::close(connection);
    }
    // The next daemon serves its own: this one no longer holds the lock.
    if (done) ::unlink(path_.c_str());
}

bool HandoverServer::answer(int connection) {
    ucred peer{};
    socklen_t length = sizeof(peer);
    if (::getsockopt(connection, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0 ||
        (peer.uid != 0 && peer.uid != ::geteuid())) {
        log::warn("hand-over: refused a peer of uid {}", peer.uid);
        return false;
    }
    set_timeouts(connection, std::chrono::seconds(2));
    auto request = listeners::receive_fds(connection);
    if (!request || request->kind != "handover" || !request->fds.empty()) {
        if (request) {
            for (const auto& named : request->fds) ::close(named.fd);
        }
        log::warn("hand-over: a malformed request from pid {}", peer.pid);
        return false;
    }
    log::info("hand-over: pid {} takes over; stopping the syncs", peer.pid);
    std::vector<NamedFd> sockets = give_();
    if (sockets.size() > listeners::kMaxPassedFds) sockets.resize(listeners::kMaxPassedFds);
    if (auto sent = listeners::send_fds(connection, "sockets", sockets); !sent) {
        // The syncs stopped: the new daemon binds afresh and takes the lock.
        log::warn("hand-over: {}", sent.error().describe());
    }
    log::info("hand-over: {} sockets passed to pid {}", sockets.size(), peer.pid);
    sent_();
    return true;
}

}  // namespace sb::proxy
