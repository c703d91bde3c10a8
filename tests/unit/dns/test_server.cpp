// The server over loopback sockets: UDP and TCP framing, truncation, the
// TCP idle timeout and connection bound. Loopback only.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch.hpp>

#include <chrono>
#include <thread>

#include "dns/server.h"
#include "dns/socket_util.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::shared_ptr<const Zone> zone_with_endpoints(int count, bool synced = true) {
    watch::Snapshot snapshot;
    snapshot.synced = synced;
    watch::Service many;
    many.meta.ns = "default";
    many.meta.name = "many";
    many.headless = true;
    snapshot.services[many.meta.key()] = std::make_shared<const watch::Service>(many);
    watch::EndpointSlice slice;
    slice.meta.ns = "default";
    slice.meta.name = "many-1";
    slice.service_name = "many";
    for (int i = 0; i < count; ++i) {
        watch::Endpoint e;
        e.addresses = {IpAddress::v4(0x0a000001u + static_cast<uint32_t>(i))};
        slice.endpoints.push_back(e);
    }
    snapshot.endpoint_slices[slice.meta.key()] =
        std::make_shared<const watch::EndpointSlice>(slice);
    return *Zone::build(snapshot, ZoneConfig{});
}

std::string query_bytes(uint16_t id, const char* name) {
    Message q;
    q.header.id = id;
    q.questions.push_back({*name_from_text(name), type::kA, kClassIN});
    return write_message(q).bytes;
}

// Waits up to 5 s for `fd` to become readable.
bool readable(int fd) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 5000) == 1;
}

Message parse(const std::string& bytes) {
    auto parsed = parse_message({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    REQUIRE(parsed.ok());
    return *parsed;
}

Message udp_ask(const HostPort& server, const std::string& packet) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    SocketAddress to = to_socket_address(server);
    ::sendto(fd, packet.data(), packet.size(), 0, to.sockaddr(), to.length());
    REQUIRE(readable(fd));
    char buffer[4096];
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    ::close(fd);
    REQUIRE(n > 0);
    return parse(std::string(buffer, static_cast<size_t>(n)));
}

int tcp_connect(const HostPort& server) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    SocketAddress to = to_socket_address(server);
    REQUIRE(::connect(fd, to.sockaddr(), to.length()) == 0);
    return fd;
}

std::string framed(const std::string& packet) {
    std::string out;
    out.push_back(static_cast<char>(packet.size() >> 8));
    out.push_back(static_cast<char>(packet.size() & 0xff));
    return out + packet;
}

Message tcp_read(int fd) {
    std::string in;
    size_t want = 2;
    while (in.size() < want) {
        REQUIRE(readable(fd));
        char buffer[65536];
        ssize_t n = ::recv(fd, buffer, std::min(sizeof(buffer), want - in.size()), 0);
        REQUIRE(n > 0);
        in.append(buffer, static_cast<size_t>(n));
        if (want == 2 && in.size() == 2) {
            want = 2 + ((static_cast<uint8_t>(in[0]) << 8) | static_cast<uint8_t>(in[1]));
        }
    }
    return parse(in.substr(2));
}

struct Running {
    ZoneHolder zones;
    std::unique_ptr<Server> server;
    HostPort address;

    explicit Running(std::shared_ptr<const Zone> zone, size_t max_tcp = 1024,
                     std::chrono::seconds idle = std::chrono::seconds(10)) {
        zones.publish(std::move(zone));
        ServerOptions options;
        options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
        options.workers = 1;
        options.max_tcp_connections = max_tcp;
        options.tcp_idle_timeout = idle;
        server = std::make_unique<Server>(options, zones, nullptr, nullptr);
        auto status = server->start();
        REQUIRE(status.ok());
        address = server->bound().at(0);
        REQUIRE(address.port != 0);
    }
};

}  // namespace

TEST_CASE("server: UDP replies, TC when too big, full answer over TCP") {
    Running r(zone_with_endpoints(100));
    Message small = udp_ask(r.address, query_bytes(7, "many.default.svc.cluster.local"));
    CHECK(small.header.id == 7);
    CHECK(small.header.tc);  // 100 A records do not fit 512 bytes
    CHECK(small.answers.empty());

    int fd = tcp_connect(r.address);
    std::string two = framed(query_bytes(1, "many.default.svc.cluster.local")) +
                      framed(query_bytes(2, "nope.default.svc.cluster.local"));
    REQUIRE(::send(fd, two.data(), two.size(), 0) == static_cast<ssize_t>(two.size()));
    Message first = tcp_read(fd);
    Message second = tcp_read(fd);
    ::close(fd);
    CHECK(first.header.id == 1);
    CHECK_FALSE(first.header.tc);
    CHECK(first.answers.size() == 100);
    CHECK(second.header.id == 2);
    CHECK(second.header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
}

TEST_CASE("server: garbage gets FORMERR, other zones REFUSED without upstreams") {
    Running r(zone_with_endpoints(1));
    std::string garbage = query_bytes(9, "many.default.svc.cluster.local") + "xyz";
    CHECK(udp_ask(r.address, garbage).header.rcode == static_cast<uint8_t>(Rcode::kFormErr));
    CHECK(udp_ask(r.address, query_bytes(10, "www.example.com")).header.rcode ==
          static_cast<uint8_t>(Rcode::kRefused));
}

TEST_CASE("server: SERVFAIL for cluster names until the zone is synced") {
    Running r(zone_with_endpoints(1, false));
    std::string q = query_bytes(3, "many.default.svc.cluster.local");
    CHECK(udp_ask(r.address, q).header.rcode == static_cast<uint8_t>(Rcode::kServFail));
    r.zones.publish(zone_with_endpoints(1, true));
    // Each serving thread sees the new zone with its next batch.
    CHECK(udp_ask(r.address, q).header.rcode == static_cast<uint8_t>(Rcode::kNoError));
}

TEST_CASE("server: idle TCP connections are closed, and their number is bounded") {
    Running r(zone_with_endpoints(1), 2, std::chrono::seconds(1));
    int a = tcp_connect(r.address);
    int b = tcp_connect(r.address);
    int c = tcp_connect(r.address);  // over the bound: accepted, then closed
    char byte;
    REQUIRE(readable(c));
    CHECK(::recv(c, &byte, 1, 0) == 0);
    // The two others are closed by the idle timeout (1 s, checked each second).
    REQUIRE(readable(a));
    CHECK(::recv(a, &byte, 1, 0) == 0);
    REQUIRE(readable(b));
    CHECK(::recv(b, &byte, 1, 0) == 0);
    for (int fd : {a, b, c}) ::close(fd);
    sb::metrics::TextWriter writer;
    r.server->append_metrics(writer);
    const std::string metrics = writer.text();
    CHECK(metrics.find("switchboard_dns_tcp_rejected_total 1") != std::string::npos);
}
