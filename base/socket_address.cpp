#include "base/socket_address.h"

#include <netinet/tcp.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace sb {

SocketAddress to_socket_address(const HostPort& address) {
    SocketAddress out;
    if (address.address.is_v4()) {
        auto* in = reinterpret_cast<sockaddr_in*>(&out.storage());
        in->sin_family = AF_INET;
        in->sin_port = htons(address.port);
        std::memcpy(&in->sin_addr, address.address.bytes(), 4);
    } else {
        auto* in6 = reinterpret_cast<sockaddr_in6*>(&out.storage());
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(address.port);
        std::memcpy(&in6->sin6_addr, address.address.bytes(), 16);
    }
    return out;
}

HostPort from_socket_address(const sockaddr_storage& address) {
    HostPort out;
    if (address.ss_family == AF_INET) {
        const auto* in = reinterpret_cast<const sockaddr_in*>(&address);
        out.address =
            IpAddress::from_bytes(IpFamily::kV4, reinterpret_cast<const uint8_t*>(&in->sin_addr));
        out.port = ntohs(in->sin_port);
    } else if (address.ss_family == AF_INET6) {
        const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&address);
        out.address =
            IpAddress::from_bytes(IpFamily::kV6, reinterpret_cast<const uint8_t*>(&in6->sin6_addr));
        out.port = ntohs(in6->sin6_port);
    }
    return out;
}

Result<int> bind_socket(const HostPort& address, int type) {
    SocketAddress sa = to_socket_address(address);
    int fd = ::socket(sa.family(), type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(ErrorCode::kIo, fmt::format("socket for {}", address), errno);
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (type == SOCK_STREAM) ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (sa.family() == AF_INET6) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (::bind(fd, sa.sockaddr(), sa.length()) != 0) {
        int saved = errno;
        ::close(fd);
        return make_error(ErrorCode::kIo,
                          fmt::format("{} bind {}", type == SOCK_STREAM ? "TCP" : "UDP", address),
                          saved);
    }
    if (type == SOCK_STREAM && ::listen(fd, 256) != 0) {
        int saved = errno;
        ::close(fd);
        return make_error(ErrorCode::kIo, fmt::format("listen {}", address), saved);
    }
    return fd;
}

}  // namespace sb
