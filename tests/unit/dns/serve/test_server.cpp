// The server over loopback sockets: UDP and TCP framing, truncation, the
// TCP timeouts, eviction and half-close, listeners that cannot bind at
// first. Loopback only.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch.hpp>

#include <chrono>
#include <thread>

#include "base/socket_address.h"
#include "base/threads/panic_guard.h"
#include "dns/dns_service.h"
#include "dns/serve/server.h"
#include "tests/unit/exposition.h"
#include "watch/snapshot_builder.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::shared_ptr<const Zone> zone_with_endpoints(int count, bool synced = true) {
    watch::SnapshotBuilder snapshot;
    snapshot.synced(synced);
    watch::Service many;
    many.meta.ns = "default";
    many.meta.name = "many";
    many.headless = true;
    snapshot.add(many);
    watch::EndpointSlice slice;
    slice.meta.ns = "default";
    slice.meta.name = "many-1";
    slice.service_name = "many";
    for (int i = 0; i < count; ++i) {
        watch::Endpoint e;
        e.addresses = {IpAddress::v4(0x0a000001u + static_cast<uint32_t>(i))};
        slice.endpoints.push_back(e);
    }
    snapshot.add(slice);
    return *Zone::build(*snapshot.build(), ZoneConfig{});
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

// The raw reply to `packet`.
std::string udp_exchange(const HostPort& server, const std::string& packet) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    SocketAddress to = to_socket_address(server);
    ::sendto(fd, packet.data(), packet.size(), 0, to.sockaddr(), to.length());
    REQUIRE(readable(fd));
    char buffer[4096];
    ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    ::close(fd);
    REQUIRE(n > 0);
    return std::string(buffer, static_cast<size_t>(n));
}

Message udp_ask(const HostPort& server, const std::string& packet) {
    return parse(udp_exchange(server, packet));
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

// A socket holding 127.0.0.1:`port` (0: a free one) without SO_REUSEPORT,
// so that the server cannot bind it too.
int hold(int type, uint16_t port) {
    int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    SocketAddress at = to_socket_address(HostPort{*IpAddress::parse("127.0.0.1"), port});
    REQUIRE(::bind(fd, at.sockaddr(), at.length()) == 0);
    if (type == SOCK_STREAM) REQUIRE(::listen(fd, 1) == 0);
    return fd;
}

uint16_t port_of(int fd) {
    SocketAddress bound;
    socklen_t length = sizeof(sockaddr_storage);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound.storage()), &length);
    return from_socket_address(bound.storage()).port;
}

// Polls `done` for up to 10 s.
template <typename F>
bool eventually(F done) {
    for (int i = 0; i < 500; ++i) {
        if (done()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

std::string metrics_of(const Server& server) {
    sb::metrics::TextWriter writer;
    server.append_metrics(writer);
    return writer.text();
}

// The value of the sample `series` (name and labels) in `text`; -1 when absent.
double sample_value(const std::string& text, const std::string& series) {
    size_t at = text.find("\n" + series + " ");
    if (at == std::string::npos) return -1;
    return std::stod(text.substr(at + series.size() + 2));
}

const ListenerState* find_listener(const std::vector<ListenerState>& all, bool tcp, uint16_t port) {
    for (const auto& listener : all) {
        if (listener.tcp == tcp && listener.address.port == port) return &listener;
    }
    return nullptr;
}

struct Running {
    ZoneHolder zones;
    EngineHolder engines;  // none published: no upstreams
    std::unique_ptr<Server> server;
    HostPort address;

    explicit Running(std::shared_ptr<const Zone> zone, size_t max_tcp = 1024,
                     std::chrono::seconds idle = std::chrono::seconds(10),
                     std::chrono::seconds read = std::chrono::seconds(3)) {
        zones.publish(std::move(zone));
        ServerOptions options;
        options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
        options.workers = 1;
        options.max_tcp_connections = max_tcp;
        options.tcp_idle_timeout = idle;
        options.tcp_read_timeout = read;
        server = std::make_unique<Server>(options, zones, engines);
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

TEST_CASE("server: over the connection bound, the least recently active one is evicted") {
    Running r(zone_with_endpoints(1), 2);
    int a = tcp_connect(r.address);
    int b = tcp_connect(r.address);
    // a's query makes b the least recently active.
    std::string q = framed(query_bytes(1, "many.default.svc.cluster.local"));
    REQUIRE(::send(a, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    CHECK(tcp_read(a).header.id == 1);
    int c = tcp_connect(r.address);
    REQUIRE(::send(c, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    CHECK(tcp_read(c).header.id == 1);
    char byte;
    REQUIRE(readable(b));
    CHECK(::recv(b, &byte, 1, 0) == 0);
    REQUIRE(::send(a, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    CHECK(tcp_read(a).header.id == 1);
    for (int fd : {a, b, c}) ::close(fd);
    CHECK(sample_value(metrics_of(*r.server), "switchboard_dns_tcp_evictions_total") == 1);
}

TEST_CASE("server: TCP connections close after the read and idle timeouts") {
    Running r(zone_with_endpoints(1), 1024, std::chrono::seconds(1), std::chrono::seconds(1));
    int quiet = tcp_connect(r.address);  // never completes a query: the read timeout
    std::string q = framed(query_bytes(1, "many.default.svc.cluster.local"));
    REQUIRE(::send(quiet, q.data(), 3, 0) == 3);
    int asked = tcp_connect(r.address);  // one query, then the idle timeout
    REQUIRE(::send(asked, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    CHECK(tcp_read(asked).header.id == 1);
    char byte;
    for (int fd : {quiet, asked}) {
        REQUIRE(readable(fd));
        CHECK(::recv(fd, &byte, 1, 0) == 0);
        ::close(fd);
    }
    CHECK(sample_value(metrics_of(*r.server), "switchboard_dns_tcp_timeouts_total") == 2);
}

TEST_CASE("server: a half-closed client gets its pipelined replies, then the close") {
    Running r(zone_with_endpoints(100));
    int fd = tcp_connect(r.address);
    std::string queries;
    for (uint16_t id = 1; id <= 50; ++id) {
        queries += framed(query_bytes(id, "many.default.svc.cluster.local"));
    }
    REQUIRE(::send(fd, queries.data(), queries.size(), 0) == static_cast<ssize_t>(queries.size()));
    REQUIRE(::shutdown(fd, SHUT_WR) == 0);
    for (uint16_t id = 1; id <= 50; ++id) {
        Message reply = tcp_read(fd);
        CHECK(reply.header.id == id);
        CHECK(reply.answers.size() == 100);
    }
    char byte;
    REQUIRE(readable(fd));
    CHECK(::recv(fd, &byte, 1, 0) == 0);
    ::close(fd);
}

TEST_CASE("server: a taken UDP port is retried while TCP and other addresses serve") {
    int udp_holder = hold(SOCK_DGRAM, 0);
    const uint16_t taken = port_of(udp_holder);
    ZoneHolder zones;
    EngineHolder engines;  // none published: no upstreams
    zones.publish(zone_with_endpoints(1));
    ServerOptions options;
    const HostPort contested{*IpAddress::parse("127.0.0.1"), taken};
    options.listen = {contested, HostPort{*IpAddress::parse("127.0.0.1"), 0}};
    options.workers = 2;
    options.bind_retry_interval = std::chrono::milliseconds(50);
    Server server(options, zones, engines);
    REQUIRE(server.start().ok());

    CHECK_FALSE(server.serving());
    auto listeners = server.listeners();
    REQUIRE(listeners.size() == 4);
    const ListenerState* udp = find_listener(listeners, false, taken);
    REQUIRE(udp != nullptr);
    CHECK_FALSE(udp->serving);
    CHECK(udp->bind_failures >= 1);
    CHECK(udp->last_error.find("Address already in use") != std::string::npos);
    const ListenerState* tcp = find_listener(listeners, true, taken);
    REQUIRE(tcp != nullptr);
    CHECK(tcp->serving);
    const HostPort other = server.bound().at(1);
    REQUIRE(other.port != 0);
    CHECK(find_listener(listeners, false, other.port)->serving);
    CHECK(find_listener(listeners, true, other.port)->serving);

    // The TCP listener of the taken address and the other address answer.
    int fd = tcp_connect(contested);
    std::string q = framed(query_bytes(4, "many.default.svc.cluster.local"));
    REQUIRE(::send(fd, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    CHECK(tcp_read(fd).header.id == 4);
    ::close(fd);
    CHECK(udp_ask(other, query_bytes(5, "many.default.svc.cluster.local")).header.id == 5);

    const std::string udp_series =
        "switchboard_dns_bind_failures_total{proto=\"udp\",address=\"127.0.0.1:" +
        std::to_string(taken) + "\"}";
    const std::string tcp_series =
        "switchboard_dns_bind_failures_total{proto=\"tcp\",address=\"127.0.0.1:" +
        std::to_string(taken) + "\"}";
    const std::string up_series =
        "switchboard_dns_listener_up{proto=\"udp\",address=\"127.0.0.1:" + std::to_string(taken) +
        "\"}";
    std::string before = metrics_of(server);
    CHECK(sample_value(before, udp_series) >= 1);
    CHECK(sample_value(before, tcp_series) == 0);
    CHECK(sample_value(before, up_series) == 0);

    ::close(udp_holder);
    REQUIRE(eventually([&] { return server.serving(); }));
    CHECK(udp_ask(contested, query_bytes(6, "many.default.svc.cluster.local")).header.id == 6);
    std::string after = metrics_of(server);
    CHECK(sample_value(after, up_series) == 1);
    CHECK(find_listener(server.listeners(), false, taken)->last_error.empty());
}

TEST_CASE("server: a port taken for UDP and TCP serves both once freed") {
    int udp_holder = hold(SOCK_DGRAM, 0);
    const uint16_t taken = port_of(udp_holder);
    int tcp_holder = hold(SOCK_STREAM, taken);
    ZoneHolder zones;
    EngineHolder engines;  // none published: no upstreams
    zones.publish(zone_with_endpoints(1));
    ServerOptions options;
    const HostPort address{*IpAddress::parse("127.0.0.1"), taken};
    options.listen = {address};
    options.bind_retry_interval = std::chrono::milliseconds(50);
    Server server(options, zones, engines);
    REQUIRE(server.start().ok());
    CHECK_FALSE(server.serving());
    for (const auto& listener : server.listeners()) {
        CHECK_FALSE(listener.serving);
        CHECK(listener.bind_failures >= 1);
    }

    ::close(udp_holder);
    ::close(tcp_holder);
    REQUIRE(eventually([&] { return server.serving(); }));
    CHECK(udp_ask(address, query_bytes(8, "many.default.svc.cluster.local")).header.rcode ==
          static_cast<uint8_t>(Rcode::kNoError));
    int fd = tcp_connect(address);
    std::string q = framed(query_bytes(9, "many.default.svc.cluster.local"));
    REQUIRE(::send(fd, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    CHECK(tcp_read(fd).header.id == 9);
    ::close(fd);
}

TEST_CASE("server: stop() ends the retries of a listener that never binds") {
    int udp_holder = hold(SOCK_DGRAM, 0);
    ZoneHolder zones;
    EngineHolder engines;  // none published: no upstreams
    zones.publish(zone_with_endpoints(1));
    ServerOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), port_of(udp_holder)}};
    options.bind_retry_interval = std::chrono::milliseconds(50);
    Server server(options, zones, engines);
    REQUIRE(server.start().ok());
    REQUIRE(eventually([&] { return server.listeners().at(0).bind_failures >= 2; }));
    server.stop();
    const uint64_t failures = server.listeners().at(0).bind_failures;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CHECK(server.listeners().at(0).bind_failures == failures);
    CHECK_FALSE(server.serving());
    ::close(udp_holder);
}

TEST_CASE("server: request and response sizes by protocol, in CoreDNS's buckets") {
    Running r(zone_with_endpoints(100));
    const std::string small = query_bytes(1, "nope.default.svc.cluster.local");
    const std::string udp_reply = udp_exchange(r.address, small);
    int fd = tcp_connect(r.address);
    const std::string big = query_bytes(2, "many.default.svc.cluster.local");
    const std::string q = framed(big);
    REQUIRE(::send(fd, q.data(), q.size(), 0) == static_cast<ssize_t>(q.size()));
    REQUIRE(tcp_read(fd).answers.size() == 100);  // 100 A records: over 1023 bytes
    ::close(fd);

    auto m = testing::parse_exposition(metrics_of(*r.server));
    CHECK(m.problems.empty());
    // `server` names the configured port (0 here), stable across the kernel's pick.
    const std::string labels = "server=\"dns://:0\",zone=\".\",view=\"\",proto=";
    auto at = [&](const char* name, const char* proto, const char* suffix, const char* le = "") {
        std::string series = std::string(name) + suffix + "{" + labels + "\"" + proto + "\"";
        if (*le) series += std::string(",le=\"") + le + "\"";
        return m.value(series + "}").value_or(-1);
    };
    for (const char* name : {"coredns_dns_request_size_bytes", "coredns_dns_response_size_bytes"}) {
        CHECK(m.families.at(name).type == "histogram");
    }
    const char* request = "coredns_dns_request_size_bytes";
    const char* response = "coredns_dns_response_size_bytes";
    CHECK(at(request, "udp", "_count") == 1);
    CHECK(at(request, "udp", "_sum") == small.size());
    CHECK(at(request, "udp", "_bucket", "0") == 0);
    CHECK(at(request, "udp", "_bucket", "100") == 1);
    CHECK(at(request, "tcp", "_sum") == big.size());
    CHECK(at(response, "udp", "_sum") == udp_reply.size());
    CHECK(at(response, "udp", "_bucket", "400") == 1);
    CHECK(at(response, "tcp", "_count") == 1);
    CHECK(at(response, "tcp", "_bucket", "1023") == 0);
    CHECK(at(response, "tcp", "_bucket", "2047") == 1);
    CHECK(at(response, "tcp", "_bucket", "+Inf") == 1);
}

TEST_CASE("server: an on_late_bind that throws is counted and the retries go on") {
    int first_holder = hold(SOCK_DGRAM, 0);
    int second_holder = hold(SOCK_DGRAM, 0);
    ZoneHolder zones;
    zones.publish(zone_with_endpoints(1));
    ServerOptions options;
    const HostPort first{*IpAddress::parse("127.0.0.1"), port_of(first_holder)};
    const HostPort second{*IpAddress::parse("127.0.0.1"), port_of(second_holder)};
    options.listen = {first, second};
    options.bind_retry_interval = std::chrono::milliseconds(50);
    std::atomic<int> calls{0};
    options.on_late_bind = [&calls] {
        ++calls;
        throw std::runtime_error("late bind hook failed");
    };
    const uint64_t panics = panics_total();
    EngineHolder engines;
    Server server(options, zones, engines);
    REQUIRE(server.start().ok());
    ::close(first_holder);
    // The hook runs after the listener is serving, and the count follows
    // its throw: wait for both.
    REQUIRE(eventually([&] { return calls == 1 && panics_total() == panics + 1; }));
    // The retry thread survived the first exception: it binds the second.
    ::close(second_holder);
    REQUIRE(eventually([&] { return server.serving(); }));
    REQUIRE(eventually([&] { return calls == 2 && panics_total() == panics + 2; }));
    CHECK(udp_ask(second, query_bytes(4, "many.default.svc.cluster.local")).header.rcode ==
          static_cast<uint8_t>(Rcode::kNoError));
}

TEST_CASE("dns service: a programmed Service's name follows the proxy's reports at once") {
    watch::Store store;
    watch::Service web;
    web.meta.ns = "default";
    web.meta.name = "web";
    web.cluster_ips = {*IpAddress::parse("10.96.1.1")};
    web.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    store.upsert(web);
    store.set_synced(true);
    DnsOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
    options.workers = 1;
    options.resolv_conf = "/nonexistent";
    options.publish_after_programming = true;
    auto service = DnsService::start(options, store);
    REQUIRE(service);
    DnsService& dns = **service;
    const HostPort address = dns.bound().at(0);
    auto rcode = [&address] {
        return static_cast<Rcode>(
            udp_ask(address, query_bytes(9, "web.default.svc.cluster.local")).header.rcode);
    };
    // Before the proxy's first sync: held back (SERVFAIL, try again), not NXDOMAIN.
    CHECK(rcode() == Rcode::kServFail);
    dns.report_programmed({});  // the first sync failed
    CHECK(rcode() == Rcode::kNXDomain);
    auto programmed = std::make_shared<ProgrammedService>();
    programmed->cluster_ips = web.cluster_ips;
    programmed->ports = {ProgrammedPort{"http", watch::Protocol::kTCP, 80}};
    dns.report_programmed({{{"default", "web"}, programmed}});
    // No wait: the zone is published when the report returns.
    Message answer = udp_ask(address, query_bytes(10, "web.default.svc.cluster.local"));
    REQUIRE(answer.answers.size() == 1);
    CHECK(answer.answers[0].rdata == std::string("\x0a\x60\x01\x01", 4));
    dns.report_programmed({{{"default", "web"}, nullptr}});
    CHECK(rcode() == Rcode::kNXDomain);
    sb::metrics::TextWriter writer;
    dns.append_metrics(writer);
    CHECK(sample_value(writer.text(), "switchboard_dns_programmed_reports_total") == 3);
    CHECK(sample_value(writer.text(), "switchboard_dns_programmed_services") == 0);
    dns.stop();
}

TEST_CASE("dns service: reconfigure serves the new zone settings on the same listeners") {
    watch::Store store;
    store.set_synced(true);
    DnsOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
    options.workers = 1;
    options.ttl = 30;
    options.resolv_conf = "/nonexistent";  // no upstream: other zones REFUSED
    auto service = DnsService::start(options, store);
    REQUIRE(service);
    DnsService& dns = **service;
    const HostPort address = dns.bound().at(0);
    auto version_txt = [&address](const char* name) {
        Message q;
        q.header.id = 7;
        q.questions.push_back({*name_from_text(name), type::kTXT, kClassIN});
        return udp_ask(address, write_message(q).bytes);
    };
    Message before = version_txt("dns-version.cluster.local");
    REQUIRE(before.answers.size() == 1);
    CHECK(before.answers[0].ttl == 30);

    DnsOptions next = options;
    next.cluster_domain = "example.local";
    next.ttl = 60;
    REQUIRE(dns.reconfigure(next).ok());
    CHECK(dns.bound() == std::vector<HostPort>{address});
    Message after = version_txt("dns-version.example.local");
    REQUIRE(after.answers.size() == 1);
    CHECK(after.answers[0].ttl == 60);
    CHECK(version_txt("dns-version.cluster.local").header.rcode ==
          static_cast<uint8_t>(Rcode::kRefused));

    next.cluster_domain = "bad..domain";
    CHECK_FALSE(dns.reconfigure(next).ok());
    CHECK(version_txt("dns-version.example.local").answers.size() == 1);
    dns.stop();
}

TEST_CASE(
    "dns service: reconfigure moves the listeners, the new ones serving before the old close") {
    watch::Store store;
    store.set_synced(true);
    DnsOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
    options.workers = 1;
    options.resolv_conf = "/nonexistent";
    auto service = DnsService::start(options, store);
    REQUIRE(service);
    DnsService& dns = **service;
    const HostPort old_address = dns.bound().at(0);
    auto asks = [](const HostPort& at) {
        Message q;
        q.header.id = 9;
        q.questions.push_back({*name_from_text("dns-version.cluster.local"), type::kTXT, kClassIN});
        return udp_ask(at, write_message(q).bytes).answers.size() == 1;
    };
    REQUIRE(asks(old_address));

    DnsOptions next = options;
    next.listen = {HostPort{*IpAddress::parse("127.0.0.2"), 0}};
    REQUIRE(dns.reconfigure(next).ok());
    REQUIRE(dns.bound().size() == 1);
    const HostPort new_address = dns.bound().at(0);
    CHECK(new_address.address == *IpAddress::parse("127.0.0.2"));
    CHECK(asks(new_address));
    CHECK(dns.serving());
    // The old listener is closed: its port can be bound again.
    ::close(hold(SOCK_DGRAM, old_address.port));
    dns.stop();
}

TEST_CASE("dns service: the search path serves the Store's Pods, a reload turns it off") {
    char resolv[] = "/tmp/sb-autopath-resolv-XXXXXX";
    int fd = ::mkstemp(resolv);
    REQUIRE(fd >= 0);
    const std::string text = "search corp.example\n";  // no nameserver: no upstream
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    watch::Store store;
    store.set_synced(true);
    // The test's client is a Pod of namespace `a` at 127.0.0.1.
    watch::Pod pod;
    pod.meta = {"a", "client", "", {}, {}};
    pod.node_name = "node-a";
    pod.phase = watch::PodPhase::kRunning;
    pod.pod_ips = {*IpAddress::parse("127.0.0.1")};
    store.upsert(pod);
    DnsOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 0}};
    options.workers = 1;
    options.resolv_conf = resolv;
    options.node_name = "node-a";
    options.autopath = true;
    auto service = DnsService::start(options, store);
    REQUIRE(service);
    DnsService& dns = **service;
    const HostPort address = dns.bound().at(0);
    auto ask = [&address] {
        Message q;
        q.header.id = 3;
        q.questions.push_back(
            {*name_from_text("dns-version.a.svc.cluster.local"), type::kTXT, kClassIN});
        return udp_ask(address, write_message(q).bytes);
    };
    // dns-version.svc.cluster.local is NXDOMAIN, dns-version.cluster.local answers.
    Message walked = ask();
    REQUIRE(walked.answers.size() == 2);
    CHECK(walked.answers[0].rtype == type::kCNAME);
    CHECK(walked.answers[0].rdata == *name_from_text("dns-version.cluster.local"));
    CHECK(walked.answers[1].rtype == type::kTXT);
    sb::metrics::TextWriter writer;
    dns.append_metrics(writer);
    const std::string metrics = writer.text();
    // The server label is the configured listen port's (0 here), as for coredns_dns_*.
    CHECK(metrics.find("coredns_autopath_success_total{server=\"dns://:0\"} 1\n") !=
          std::string::npos);
    CHECK(metrics.find("switchboard_dns_autopath_round_trips_saved_total 2\n") !=
          std::string::npos);

    DnsOptions off = options;
    off.autopath = false;
    REQUIRE(dns.reconfigure(off).ok());
    CHECK(ask().header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));
    REQUIRE(dns.reconfigure(options).ok());
    CHECK(ask().answers.size() == 2);
    // A Pod that is gone is no client any more (once the builder has
    // taken the Store's change), and the zone is not republished for it.
    auto zone_metric = [&dns](const char* name) {
        sb::metrics::TextWriter out;
        dns.append_metrics(out);
        return sample_value(out.text(), name);
    };
    const double rebuilds = zone_metric("switchboard_dns_zone_rebuilds_total");
    store.remove(watch::Kind::kPod, {"a", "client"});
    CHECK(eventually([&] { return ask().header.rcode == static_cast<uint8_t>(Rcode::kNXDomain); }));
    CHECK(zone_metric("switchboard_dns_zone_rebuilds_total") == rebuilds);
    dns.stop();
    ::unlink(resolv);
}
