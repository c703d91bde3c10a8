// Fake upstreams on loopback for the forwarder's tests: each test drives
// them by hand (receive a query, send a reply), so what reached which
// upstream is observed, not assumed.
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch.hpp>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "base/socket_address.h"
#include "dns/forward/forward.h"

namespace sb::dns::testing {

inline HostPort local_address(int fd) {
    SocketAddress local;
    socklen_t length = sizeof(sockaddr_storage);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage()), &length);
    return from_socket_address(local.storage());
}

inline Message parse_or_fail(const char* data, size_t size) {
    auto parsed = parse_message({reinterpret_cast<const uint8_t*>(data), size});
    REQUIRE(parsed.ok());
    return *parsed;
}

struct FakeUpstream {
    int fd = -1;
    HostPort address;
    sockaddr_storage client{};
    socklen_t client_length = 0;

    FakeUpstream() {
        auto bound = bind_socket(HostPort{*IpAddress::parse("127.0.0.1"), 0}, SOCK_DGRAM);
        REQUIRE(bound.ok());
        fd = *bound;
        address = local_address(fd);
    }
    ~FakeUpstream() { ::close(fd); }
    FakeUpstream(const FakeUpstream&) = delete;
    FakeUpstream& operator=(const FakeUpstream&) = delete;

    Message receive() {
        pollfd p{fd, POLLIN, 0};
        REQUIRE(::poll(&p, 1, 5000) == 1);
        char buffer[4096];
        client_length = sizeof(client);
        ssize_t n = ::recvfrom(fd, buffer, sizeof(buffer), 0, reinterpret_cast<sockaddr*>(&client),
                               &client_length);
        REQUIRE(n > 0);
        return parse_or_fail(buffer, static_cast<size_t>(n));
    }
    void send(const Message& reply) {
        std::string bytes = write_message(reply).bytes;
        ::sendto(fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&client),
                 client_length);
    }
    // A query is waiting now (no wait: for "nothing was sent here" once every
    // submitted query has completed).
    bool has_query() const {
        pollfd p{fd, POLLIN, 0};
        return ::poll(&p, 1, 0) == 1;
    }
    // The names of every query waiting now, lower-case text; consumes them.
    std::vector<std::string> drain_names() {
        std::vector<std::string> names;
        while (has_query())
            names.push_back(name_to_text(name_lower(receive().questions.at(0).name)));
        return names;
    }
};

// A TCP upstream: one connection at a time, accepted by receive().
struct FakeTcpUpstream {
    int listener = -1;
    int connection = -1;
    HostPort address;

    // On `at` (port 0: one the kernel picks).
    explicit FakeTcpUpstream(HostPort at = HostPort{*IpAddress::parse("127.0.0.1"), 0}) {
        auto bound = bind_socket(at, SOCK_STREAM);
        REQUIRE(bound.ok());
        listener = *bound;
        address = local_address(listener);
    }
    ~FakeTcpUpstream() {
        if (connection >= 0) ::close(connection);
        ::close(listener);
    }
    FakeTcpUpstream(const FakeTcpUpstream&) = delete;
    FakeTcpUpstream& operator=(const FakeTcpUpstream&) = delete;

    bool read_exactly(char* out, size_t size) {
        size_t got = 0;
        while (got < size) {
            pollfd p{connection, POLLIN, 0};
            if (::poll(&p, 1, 5000) != 1) return false;
            ssize_t n = ::recv(connection, out + got, size - got, 0);
            if (n <= 0) return false;
            got += static_cast<size_t>(n);
        }
        return true;
    }
    Message receive() {
        pollfd p{listener, POLLIN, 0};
        REQUIRE(::poll(&p, 1, 5000) == 1);
        if (connection >= 0) ::close(connection);
        connection = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        REQUIRE(connection >= 0);
        char length[2];
        REQUIRE(read_exactly(length, 2));
        size_t size = static_cast<uint8_t>(length[0]) << 8 | static_cast<uint8_t>(length[1]);
        std::string packet(size, '\0');
        REQUIRE(read_exactly(packet.data(), size));
        return parse_or_fail(packet.data(), size);
    }
    void send(const Message& reply) {
        std::string bytes = write_message(reply).bytes;
        std::string framed{static_cast<char>(bytes.size() >> 8),
                           static_cast<char>(bytes.size() & 0xff)};
        framed += bytes;
        REQUIRE(::send(connection, framed.data(), framed.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(framed.size()));
    }
    // A connection is waiting to be accepted now.
    bool has_query() const {
        pollfd p{listener, POLLIN, 0};
        return ::poll(&p, 1, 0) == 1;
    }
};

inline Question question(const char* name) {
    return {*name_from_text(name), type::kA, kClassIN};
}

inline StubZone stub(const char* zone, std::vector<HostPort> upstreams) {
    return {name_lower(*name_from_text(zone)), std::move(upstreams)};
}

inline Message reply_to(const Message& query, Rcode rcode = Rcode::kNoError) {
    Message reply = query;
    reply.header.qr = true;
    reply.header.rcode = static_cast<uint8_t>(rcode);
    return reply;
}

// One submitted query's result, to wait for.
class Asked {
  public:
    Asked(Forwarder& forwarder, const char* name, ClientProtocol client = ClientProtocol::kUdp)
        : promise_(std::make_shared<std::promise<Result<Message>>>()),
          future_(promise_->get_future()) {
        forwarder.submit(
            question(name),
            [promise = promise_](Result<Message> reply) { promise->set_value(std::move(reply)); },
            client);
    }
    Result<Message> get() {
        REQUIRE(future_.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
        return future_.get();
    }

  private:
    std::shared_ptr<std::promise<Result<Message>>> promise_;
    std::future<Result<Message>> future_;
};

// Submits `name`, expects it at `upstream`, answers NOERROR there and
// returns the forwarder's result.
template <typename Upstream>
Result<Message> ask_at(Forwarder& forwarder, const char* name, Upstream& upstream,
                       ClientProtocol client = ClientProtocol::kUdp) {
    Asked asked(forwarder, name, client);
    Message query = upstream.receive();
    CHECK(query.questions.at(0).name == *name_from_text(name));
    upstream.send(reply_to(query));
    return asked.get();
}

inline std::string metrics_text(const Forwarder& forwarder) {
    metrics::TextWriter writer;
    forwarder.append_metrics(writer);
    return writer.text();
}

}  // namespace sb::dns::testing
