#include "base/listeners/socket_pool.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch.hpp>

#include "base/socket_address.h"

using namespace sb;
using namespace sb::listeners;

namespace {

HostPort loopback(uint16_t port) {
    return HostPort{*IpAddress::parse("127.0.0.1"), port};
}

uint16_t port_of(int fd) {
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0);
    return from_socket_address(bound).port;
}

ino_t inode(int fd) {
    struct stat info {};
    REQUIRE(::fstat(fd, &info) == 0);
    return info.st_ino;
}

bool open_fd(int fd) {
    return ::fcntl(fd, F_GETFD) >= 0;
}

// A listening socket of `type` on a loopback port the kernel picks.
int bound(int type, uint16_t port = 0) {
    auto fd = bind_socket(loopback(port), type);
    REQUIRE(fd.ok());
    return *fd;
}

}  // namespace

TEST_CASE("SocketPool adopts an offered socket of the same type and address") {
    SocketPool pool;
    const int udp = bound(SOCK_DGRAM);
    const uint16_t port = port_of(udp);
    const int tcp = bound(SOCK_STREAM, port);
    pool.offer({{udp, "dns"}, {tcp, "dns"}});
    CHECK(pool.offered_count() == 2);

    CHECK_FALSE(pool.adopt(loopback(port == 65535 ? 1 : port + 1), SOCK_DGRAM));
    CHECK_FALSE(pool.adopt(HostPort{*IpAddress::parse("127.0.0.2"), port}, SOCK_DGRAM));
    CHECK_FALSE(pool.adopt(loopback(0), SOCK_DGRAM));  // port 0 asks for a new port
    auto stream = pool.adopt(loopback(port), SOCK_STREAM);
    REQUIRE(stream);
    CHECK(*stream == tcp);
    CHECK((::fcntl(tcp, F_GETFL) & O_NONBLOCK) != 0);
    auto datagram = pool.adopt(loopback(port), SOCK_DGRAM);
    REQUIRE(datagram);
    CHECK(*datagram == udp);
    CHECK_FALSE(pool.adopt(loopback(port), SOCK_DGRAM));  // each once
    CHECK(pool.offered_count() == 0);
    ::close(udp);
    ::close(tcp);
}

TEST_CASE("SocketPool closes the offered sockets nobody adopted") {
    SocketPool pool;
    const int kept = bound(SOCK_DGRAM);
    const int unused = bound(SOCK_DGRAM);
    pool.offer({{kept, "dns"}, {unused, "dns"}});
    REQUIRE(pool.adopt(loopback(port_of(kept)), SOCK_DGRAM));
    CHECK(pool.close_unadopted() == 1);
    CHECK(open_fd(kept));
    CHECK_FALSE(open_fd(unused));
    ::close(kept);
}

TEST_CASE("SocketPool refuses offered fds that are not sockets") {
    SocketPool pool;
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    pool.offer({{pipe_fds[0], "dns"}});
    CHECK(pool.offered_count() == 0);
    CHECK_FALSE(open_fd(pipe_fds[0]));
    ::close(pipe_fds[1]);
}

TEST_CASE("SocketPool sends its whole set to the supervisor on every change") {
    int channel[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) == 0);
    SocketPool pool;
    pool.set_supervisor_channel(channel[0]);
    auto next_set = [&] {
        auto received = receive_fds(channel[1]);
        REQUIRE(received.ok());
        CHECK(received->kind == "set");
        std::vector<std::pair<ino_t, std::string>> set;
        for (const auto& named : received->fds) {
            set.emplace_back(inode(named.fd), named.name);
            ::close(named.fd);
        }
        return set;
    };
    CHECK(next_set().empty());  // the channel's first message

    auto fresh = listen_on(pool, loopback(0), SOCK_STREAM, "http");
    REQUIRE(fresh.ok());
    CHECK(next_set() == std::vector<std::pair<ino_t, std::string>>{{inode(*fresh), "http"}});

    const int offered = bound(SOCK_DGRAM);
    const ino_t offered_inode = inode(offered);
    pool.offer({{offered, "dns"}});
    CHECK(next_set().size() == 2);  // offered ones are kept too
    auto adopted = listen_on(pool, loopback(port_of(offered)), SOCK_DGRAM, "dns");
    REQUIRE(adopted.ok());
    CHECK(*adopted == offered);
    CHECK(next_set().size() == 2);
    CHECK(pool.held().size() == 2);

    pool.release(*fresh);
    ::close(*fresh);
    CHECK(next_set() == std::vector<std::pair<ino_t, std::string>>{{offered_inode, "dns"}});

    SECTION("a socket closed without release() is never passed under its old number") {
        ::close(offered);
        const int reuse = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        pool.hold(bound(SOCK_STREAM), "http");
        auto set = next_set();
        REQUIRE(set.size() == 1);
        CHECK(set[0].second == "http");
        ::close(reuse);
        for (const auto& named : pool.held()) ::close(named.fd);
    }
    ::close(channel[1]);
}
