#include "base/listeners/fd_passing.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <catch.hpp>

using namespace sb;
using namespace sb::listeners;

TEST_CASE("fd names: 1-32 of [A-Za-z0-9._-]") {
    CHECK(valid_fd_name("dns"));
    CHECK(valid_fd_name("http-9153_v1.0"));
    CHECK_FALSE(valid_fd_name(""));
    CHECK_FALSE(valid_fd_name("a:b"));
    CHECK_FALSE(valid_fd_name("a b"));
    CHECK_FALSE(valid_fd_name(std::string(33, 'a')));
    CHECK(valid_fd_name(std::string(32, 'a')));
}

TEST_CASE("LISTEN_FDS: the names of the sockets passed to this process") {
    auto names = parse_listen_fds("42", "3", "dns:dns:http", 42);
    REQUIRE(names.ok());
    CHECK(*names == std::vector<std::string>{"dns", "dns", "http"});

    SECTION("another process's sockets are not ours") {
        auto other = parse_listen_fds("41", "3", "dns:dns:http", 42);
        REQUIRE(other.ok());
        CHECK(other->empty());
    }
    SECTION("no names: each is unknown") {
        auto unnamed = parse_listen_fds("42", "2", "", 42);
        REQUIRE(unnamed.ok());
        CHECK(*unnamed == std::vector<std::string>{"unknown", "unknown"});
    }
    SECTION("refused: a count off, a bad name, too many, not numbers") {
        CHECK_FALSE(parse_listen_fds("42", "2", "dns", 42).ok());
        CHECK_FALSE(parse_listen_fds("42", "1", "dns:http", 42).ok());
        CHECK_FALSE(parse_listen_fds("42", "2", "dns:", 42).ok());
        CHECK_FALSE(parse_listen_fds("42", "65", "", 42).ok());
        CHECK_FALSE(parse_listen_fds("42", "x", "", 42).ok());
        CHECK_FALSE(parse_listen_fds("", "1", "", 42).ok());
        CHECK(parse_listen_fds("42", "-1", "", 42).error().message == "LISTEN_FDS: not a number");
    }
}

TEST_CASE("fd messages: kind and one name per socket, exactly") {
    const std::string payload = encode_fd_message("set", {"dns", "http"});
    auto message = decode_fd_message(payload, 2);
    REQUIRE(message.ok());
    CHECK(message->kind == "set");
    CHECK(message->names == std::vector<std::string>{"dns", "http"});

    auto empty = decode_fd_message(encode_fd_message("set", {}), 0);
    REQUIRE(empty.ok());
    CHECK(empty->names.empty());

    CHECK(decode_fd_message(payload, 1).error().message ==
          "socket message: more names than sockets");
    CHECK(decode_fd_message(payload, 3).error().message ==
          "socket message: fewer names than sockets");
    CHECK_FALSE(decode_fd_message("set\ndns", 1).ok());
    CHECK_FALSE(decode_fd_message(encode_fd_message("Set", {}), 0).ok());
    CHECK_FALSE(decode_fd_message(encode_fd_message("set", {"a:b"}), 1).ok());
    CHECK_FALSE(decode_fd_message(encode_fd_message("set", {""}), 1).ok());

    // More sockets than may be passed at once: refused even when every one
    // is named (fd_names_fuzz found 67 names accepted).
    std::vector<std::string> many;
    for (size_t i = 0; i <= kMaxPassedFds; ++i) many.push_back(fmt::format("s{}", i));
    CHECK(decode_fd_message(encode_fd_message("set", many), many.size()).error().message ==
          "socket message: 65 sockets, more than 64");
    many.pop_back();
    CHECK(decode_fd_message(encode_fd_message("set", many), many.size()).ok());
}

namespace {

ino_t inode(int fd) {
    struct stat info {};
    REQUIRE(::fstat(fd, &info) == 0);
    return info.st_ino;
}

}  // namespace

TEST_CASE("send_fds and receive_fds pass sockets with their names") {
    int channel[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel) == 0);
    const int a = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    const int b = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(send_fds(channel[0], "set", {{a, "dns"}, {b, "http"}}).ok());
    auto received = receive_fds(channel[1]);
    REQUIRE(received.ok());
    CHECK(received->kind == "set");
    REQUIRE(received->fds.size() == 2);
    CHECK(received->fds[0].name == "dns");
    CHECK(received->fds[1].name == "http");
    CHECK(inode(received->fds[0].fd) == inode(a));
    CHECK(inode(received->fds[1].fd) == inode(b));
    for (const auto& named : received->fds) ::close(named.fd);

    SECTION("a peer that closed") {
        ::close(channel[0]);
        channel[0] = -1;
        CHECK(receive_fds(channel[1]).error().code == ErrorCode::kUnavailable);
    }
    SECTION("a message that is not ours: its sockets are closed") {
        REQUIRE(::send(channel[0], "hello", 5, 0) == 5);
        CHECK_FALSE(receive_fds(channel[1]).ok());
    }
    ::close(a);
    ::close(b);
    if (channel[0] >= 0) ::close(channel[0]);
    ::close(channel[1]);
}
