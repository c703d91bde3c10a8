#include "dns/forward/upstream_exchange.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <span>

#include "base/socket_address.h"
#include "dns/forward/secure_random.h"
#include "dns/forward/upstream_connection.h"

namespace sb::dns {

UpstreamConnection::UpstreamConnection(const HostPort& upstream, int type,
                                       std::chrono::milliseconds timeout,
                                       const std::optional<IpAddress>& source)
    : upstream_(upstream), deadline_(std::chrono::steady_clock::now() + timeout) {
    SocketAddress address = to_socket_address(upstream);
    fd_ = ::socket(address.family(), type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    if (source) {
        SocketAddress local = to_socket_address(HostPort{*source, 0});
        if (::bind(fd_, local.sockaddr(), local.length()) != 0) {
            error_ = errno;
            failed_step_ = "bind to the source address for";
            return;
        }
    }
    if (::connect(fd_, address.sockaddr(), address.length()) != 0 && errno != EINPROGRESS) {
        error_ = errno;
    }
}

UpstreamConnection::~UpstreamConnection() {
    if (fd_ >= 0) ::close(fd_);
}

Status UpstreamConnection::opened() const {
    if (fd_ < 0) return make_error(ErrorCode::kIo, "socket", errno);
    if (error_ != 0) {
        return make_error(ErrorCode::kUnavailable, fmt::format("{} {}", failed_step_, upstream_),
                          error_);
    }
    return {};
}

Status UpstreamConnection::connected() const {
    if (!wait(POLLOUT)) return make_error(ErrorCode::kUnavailable, "TCP connect timeout");
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
        return make_error(ErrorCode::kUnavailable, fmt::format("connect to {}", upstream_), error);
    }
    return {};
}

bool UpstreamConnection::wait(short events) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd_, events, 0};
    return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
}

namespace {

uint16_t packet_id(const std::string& packet) {
    if (packet.size() < 2) return 0;
    return static_cast<uint16_t>(static_cast<uint8_t>(packet[0]) << 8 |
                                 static_cast<uint8_t>(packet[1]));
}

}  // namespace

std::string tcp_framed(const std::string& packet) {
    std::string framed;
    framed.push_back(static_cast<char>(packet.size() >> 8));
    framed.push_back(static_cast<char>(packet.size() & 0xff));
    framed += packet;
    return framed;
}

Result<Message> tcp_exchange(const HostPort& upstream, const std::string& packet,
                             std::chrono::milliseconds timeout,
                             const std::optional<IpAddress>& source) {
    UpstreamConnection connection(upstream, SOCK_STREAM, timeout, source);
    if (auto status = connection.opened(); !status) return status.error();
    if (auto status = connection.connected(); !status) return status.error();
    const int fd = connection.fd();
    const std::string framed = tcp_framed(packet);
    size_t sent = 0;
    while (sent < framed.size()) {
        ssize_t n = ::send(fd, framed.data() + sent, framed.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
        } else if (n < 0 && errno == EAGAIN) {
            if (!connection.wait(POLLOUT)) {
                return make_error(ErrorCode::kUnavailable, "TCP send timeout");
            }
        } else {
            return make_error(ErrorCode::kUnavailable, "TCP send", errno);
        }
    }
    std::string in;
    size_t want = 2;
    while (in.size() < want) {
        char buffer[4096];
        ssize_t n = ::recv(fd, buffer, std::min(sizeof(buffer), want - in.size()), 0);
        if (n > 0) {
            in.append(buffer, static_cast<size_t>(n));
            if (want == 2 && in.size() == 2) {
                want = 2 + ((static_cast<uint8_t>(in[0]) << 8) | static_cast<uint8_t>(in[1]));
            }
        } else if (n < 0 && errno == EAGAIN) {
            if (!connection.wait(POLLIN)) {
                return make_error(ErrorCode::kUnavailable, "TCP reply timeout");
            }
        } else {
            return make_error(ErrorCode::kUnavailable, "TCP connection closed early", errno);
        }
    }
    auto bytes =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.data()) + 2, in.size() - 2);
    return parse_message(bytes);
}

Result<Message> udp_exchange(const HostPort& upstream, const std::string& packet,
                             std::chrono::milliseconds timeout,
                             const std::optional<IpAddress>& source) {
    UpstreamConnection connection(upstream, SOCK_DGRAM, timeout, source);
    if (auto status = connection.opened(); !status) return status.error();
    const int fd = connection.fd();
    if (::send(fd, packet.data(), packet.size(), 0) < 0) {
        return make_error(ErrorCode::kUnavailable, fmt::format("UDP send to {}", upstream), errno);
    }
    const uint16_t id = packet_id(packet);
    uint8_t buffer[65536];
    while (connection.wait(POLLIN)) {
        ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) continue;
            return make_error(ErrorCode::kUnavailable, fmt::format("UDP reply from {}", upstream),
                              errno);
        }
        auto reply = parse_message(std::span<const uint8_t>(buffer, static_cast<size_t>(n)));
        // A query (QR=0) with our ID is not an answer (issue 10).
        if (reply && reply->header.qr && reply->header.id == id) return reply;
    }
    return make_error(ErrorCode::kUnavailable, fmt::format("UDP reply timeout from {}", upstream));
}

Result<Message> ask_question(const HostPort& server, const Question& question,
                             std::chrono::milliseconds timeout) {
    Message query;
    query.header.id = SecureRandom().next16();
    query.header.rd = true;
    query.questions.push_back(question);
    query.edns = Edns{};
    const std::string packet = write_message(query).bytes;
    auto reply = udp_exchange(server, packet, timeout);
    if (reply && reply->header.tc) reply = tcp_exchange(server, packet, timeout);
    if (!reply) return reply;
    if (reply->questions.size() != 1 ||
        name_lower(reply->questions[0].name) != name_lower(question.name) ||
        reply->questions[0].qtype != question.qtype) {
        return make_error(ErrorCode::kUnavailable,
                          fmt::format("the reply from {} is for another question", server));
    }
    return reply;
}

}  // namespace sb::dns
