#include "base/listeners/socket_pool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/log.h"
#include "base/socket_address.h"

namespace sb::listeners {

namespace {

// The socket's inode; 0 when `fd` is not an open socket.
ino_t socket_inode(int fd) {
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode)) return 0;
    return info.st_ino;
}

int socket_option(int fd, int option) {
    int value = 0;
    socklen_t length = sizeof(value);
    if (::getsockopt(fd, SOL_SOCKET, option, &value, &length) != 0) return -1;
    return value;
}

bool bound_to(int fd, const HostPort& address) {
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return false;
    if (bound.ss_family != AF_INET && bound.ss_family != AF_INET6) return false;
    return from_socket_address(bound) == address;
}

std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value ? value : "";
}

}  // namespace

SocketPool::~SocketPool() {
    for (const auto& entry : offered_) ::close(entry.socket.fd);
    if (channel_ >= 0) ::close(channel_);
}

SocketPool& SocketPool::process() {
    static SocketPool pool;
    return pool;
}

std::vector<std::string> SocketPool::inherit_from_environment() {
    std::vector<std::string> warnings;
    const std::string pid = environment("LISTEN_PID");
    const std::string count = environment("LISTEN_FDS");
    const std::string names = environment("LISTEN_FDNAMES");
    const std::string channel = environment(kSupervisorFdVariable);
    for (const char* name : {"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", kSupervisorFdVariable}) {
        ::unsetenv(name);
    }
    if (!count.empty()) {
        auto parsed = parse_listen_fds(pid, count, names, ::getpid());
        if (!parsed) {
            warnings.push_back(
                fmt::format("inherited sockets not used: {}", parsed.error().describe()));
        } else {
            std::vector<NamedFd> fds;
            for (size_t i = 0; i < parsed->size(); ++i) {
                fds.push_back(NamedFd{static_cast<int>(3 + i), (*parsed)[i]});
            }
            offer(std::move(fds));
        }
    }
    if (!channel.empty()) {
        char* end = nullptr;
        const long fd = std::strtol(channel.c_str(), &end, 10);
        if (*end != '\0' || fd < 3 || fd > 1 << 20 || socket_inode(static_cast<int>(fd)) == 0) {
            warnings.push_back(fmt::format("{}={}: not a socket; no supervisor keeps the sockets",
                                           kSupervisorFdVariable, channel));
        } else {
            set_supervisor_channel(static_cast<int>(fd));
        }
    }
    return warnings;
}

void SocketPool::offer(std::vector<NamedFd> fds) {
    std::lock_guard lock(mutex_);
    for (auto& named : fds) {
        const ino_t inode = socket_inode(named.fd);
        if (inode == 0) {
            log::warn("inherited fd {} ({}) is not a socket: closed", named.fd, named.name);
            ::close(named.fd);
            continue;
        }
        ::fcntl(named.fd, F_SETFD, FD_CLOEXEC);
        offered_.push_back(Entry{std::move(named), inode});
    }
    publish_locked();
}

void SocketPool::set_supervisor_channel(int channel) {
    ::fcntl(channel, F_SETFD, FD_CLOEXEC);
    timeval timeout{1, 0};
    ::setsockopt(channel, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
    std::lock_guard lock(mutex_);
    if (channel_ >= 0) ::close(channel_);
    channel_ = channel;
    publish_locked();
}

std::optional<int> SocketPool::adopt(const HostPort& address, int type) {
    if (address.port == 0) return std::nullopt;
    std::lock_guard lock(mutex_);
    for (auto it = offered_.begin(); it != offered_.end(); ++it) {
        const int fd = it->socket.fd;
        if (socket_option(fd, SO_TYPE) != type || !bound_to(fd, address)) continue;
        if (type == SOCK_STREAM && socket_option(fd, SO_ACCEPTCONN) != 1) continue;
        if (type == SOCK_STREAM) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        offered_.erase(it);
        // Still in the set: the caller holds it next (no publish in between).
        return fd;
    }
    return std::nullopt;
}

void SocketPool::hold(int fd, const std::string& name) {
    const ino_t inode = socket_inode(fd);
    if (inode == 0) return;
    std::lock_guard lock(mutex_);
    for (auto& entry : held_) {
        if (entry.socket.fd == fd && entry.inode == inode) return;
    }
    held_.push_back(Entry{NamedFd{fd, name}, inode});
    publish_locked();
}

void SocketPool::release(int fd) {
    std::lock_guard lock(mutex_);
    const size_t before = held_.size();
    std::erase_if(held_, [fd](const Entry& entry) { return entry.socket.fd == fd; });
    if (held_.size() != before) publish_locked();
}

size_t SocketPool::close_unadopted() {
    std::lock_guard lock(mutex_);
    const size_t closed = offered_.size();
    for (const auto& entry : offered_) {
        log::info("inherited {} socket fd {}: no listener asked for it, closed", entry.socket.name,
                  entry.socket.fd);
        ::close(entry.socket.fd);
    }
    offered_.clear();
    if (closed > 0) publish_locked();
    return closed;
}

size_t SocketPool::offered_count() const {
    std::lock_guard lock(mutex_);
    return offered_.size();
}

std::vector<NamedFd> SocketPool::held() const {
    std::lock_guard lock(mutex_);
    std::vector<NamedFd> out;
    for (const auto& entry : held_) out.push_back(entry.socket);
    return out;
}

void SocketPool::publish_locked() {
    // A held socket closed without release() must not be passed under a
    // reused fd number.
    std::erase_if(held_,
                  [](const Entry& entry) { return socket_inode(entry.socket.fd) != entry.inode; });
    if (channel_ < 0) return;
    std::vector<NamedFd> set;
    for (const auto* list : {&held_, &offered_}) {
        for (const auto& entry : *list) {
            if (set.size() < kMaxPassedFds) set.push_back(entry.socket);
        }
    }
    if (held_.size() + offered_.size() > kMaxPassedFds && !warned_full_) {
        warned_full_ = true;
        log::warn("{} listening sockets: the supervisor keeps the first {}",
                  held_.size() + offered_.size(), kMaxPassedFds);
    }
    if (auto status = send_fds(channel_, "set", set); !status) {
        log::warn("the supervisor does not take the sockets: {}; not sent again",
                  status.error().describe());
        ::close(channel_);
        channel_ = -1;
    }
}

Result<int> listen_on(SocketPool& pool, const HostPort& address, int type,
                      const std::string& name) {
    if (auto adopted = pool.adopt(address, type)) {
        pool.hold(*adopted, name);
        return *adopted;
    }
    auto fd = bind_socket(address, type);
    if (fd) pool.hold(*fd, name);
    return fd;
}

}  // namespace sb::listeners
