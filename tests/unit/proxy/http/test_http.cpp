// HttpServer over loopback, /healthz semantics and health-check node ports.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>

#include <atomic>
#include <functional>
#include <thread>

#include "proxy/http/health.h"
#include "proxy/http/server.h"
#include "tests/unit/eventually.h"
#include "tests/unit/proxy/http/http_client.h"

using namespace sb;
using namespace sb::proxy;
using namespace sb::proxy::test;
using sb::testing::eventually;
using namespace std::chrono_literals;

namespace {

const HostPort kLoopbackAnyPort{*IpAddress::parse("127.0.0.1"), 0};

rules::ServicePortPlan local_port(const char* ns, const char* name, uint16_t health_port,
                                  std::vector<std::pair<const char*, bool>> local_endpoints) {
    rules::ServicePortPlan port;
    port.ns = ns;
    port.service = name;
    port.external_traffic_policy = rules::TrafficPolicy::kLocal;
    port.health_check_node_port = health_port;
    for (auto [ip, ready] : local_endpoints) {
        rules::Endpoint endpoint;
        endpoint.ip = *IpAddress::parse(ip);
        endpoint.port = 80;
        endpoint.ready = ready;
        endpoint.is_local = true;
        port.local_endpoints.push_back(endpoint);
    }
    return port;
}

// A free loopback port: bound, read back, released.
uint16_t free_port() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    socklen_t length = sizeof(address);
    getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    close(fd);
    return ntohs(address.sin_port);
}

}  // namespace

TEST_CASE("the HTTP server routes, 404s, 405s and survives a throwing handler") {
    HttpServer server;
    HttpRoutes routes;
    routes["/hello"] = [] { return HttpResponse{200, "text/plain", "hi\n", {{"X-Test", "1"}}}; };
    routes["/throw"] = []() -> HttpResponse { throw std::runtime_error("boom"); };
    auto id = server.listen(kLoopbackAnyPort, routes);
    REQUIRE(id.ok());
    server.start();
    const uint16_t port = server.port(*id);
    REQUIRE(port != 0);

    auto response = get(port, "/hello?x=1");
    CHECK(status_line(response) == "HTTP/1.1 200 OK");
    CHECK(body(response) == "hi\n");
    CHECK(response.find("X-Test: 1\r\n") != std::string::npos);
    CHECK(response.find("Content-Type: text/plain\r\n") != std::string::npos);
    CHECK(status_line(get(port, "/nope")) == "HTTP/1.1 404 Not Found");
    CHECK(status_line(get(port, "/throw")) == "HTTP/1.1 500 Internal Server Error");
    CHECK(status_line(http_request(port,
                                   "POST /hello HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                   "0\r\nConnection: close\r\n\r\n")) ==
          "HTTP/1.1 405 Method Not Allowed");
    auto head = http_request(port, "HEAD /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK(status_line(head) == "HTTP/1.1 200 OK");
    CHECK(body(head).empty());
    // Garbage is dropped without taking the server down.
    http_request(port, "\x01\x02 nonsense\r\n\r\n");
    CHECK(status_line(get(port, "/hello")) == "HTTP/1.1 200 OK");

    // Two requests on one keep-alive connection.
    auto both = http_request(port,
                             "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
                             "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    CHECK(both.find("HTTP/1.1 200 OK", 1) != std::string::npos);

    server.close(*id);
    CHECK(server.port(*id) == 0);
    CHECK(get(port, "/hello").empty());
}

TEST_CASE("a port in use is a bind error naming the address") {
    HttpServer server;
    auto first = server.listen(kLoopbackAnyPort, {});
    REQUIRE(first.ok());
    const uint16_t port = server.port(*first);
    auto second = server.listen(HostPort{kLoopbackAnyPort.address, port}, {});
    REQUIRE_FALSE(second.ok());
    CHECK(second.error().message.find("bind 127.0.0.1:" + std::to_string(port)) !=
          std::string::npos);
}

TEST_CASE("healthz: healthy unless an update waits the timeout or longer") {
    ProxierHealth health(60s);
    const auto t0 = std::chrono::system_clock::time_point{} + 1000000h;
    CHECK(health.check(t0).healthy);
    health.queued(t0);
    CHECK(health.check(t0 + 59s).healthy);
    health.queued(t0 + 50s);  // the oldest pending update counts
    CHECK_FALSE(health.check(t0 + 60s).healthy);
    CHECK(health.healthz_response(t0 + 61s).status == 503);
    CHECK(health.livez_response(t0 + 61s).status == 503);
    health.updated(t0 + 62s);
    CHECK(health.check(t0 + 1000s).healthy);
    CHECK(health.healthz_response(t0 + 63s).status == 200);
    CHECK(health.livez_response(t0 + 63s).status == 200);
}

TEST_CASE("healthz and livez bodies are kube-proxy's JSON, byte for byte") {
    using std::chrono::system_clock;
    ProxierHealth health(60s);
    const auto t0 = system_clock::time_point{} + 1000000h;  // 2084-01-29T16:00:00Z
    // Never synced, nothing queued: healthy, lastUpdated is Go's zero time.
    auto never = health.livez_response(t0);
    CHECK(never.status == 200);
    CHECK(never.content_type == "application/json");
    CHECK(never.headers ==
          std::vector<std::pair<std::string, std::string>>{{"X-Content-Type-Options", "nosniff"}});
    CHECK(
        never.body ==
        R"({"lastUpdated":"2084-01-29T16:00:00Z","currentTime":"2084-01-29T16:00:00Z",)"
        R"("healthy":true,"status":{"IPv4":{"lastUpdated":"0001-01-01T00:00:00Z","healthy":true},)"
        R"("IPv6":{"lastUpdated":"0001-01-01T00:00:00Z","healthy":true}}})");

    health.updated(t0 + 1500ms);
    auto ok = health.healthz_response(t0 + 2s);
    CHECK(ok.status == 200);
    CHECK(ok.headers ==
          std::vector<std::pair<std::string, std::string>>{{"X-Content-Type-Options", "nosniff"}});
    // While healthy the top-level lastUpdated is now, the families' the last sync.
    CHECK(ok.body ==
          R"({"lastUpdated":"2084-01-29T16:00:02Z","currentTime":"2084-01-29T16:00:02Z",)"
          R"("nodeEligible":true,"healthy":true,"status":{)"
          R"("IPv4":{"lastUpdated":"2084-01-29T16:00:01.5Z","healthy":true},)"
          R"("IPv6":{"lastUpdated":"2084-01-29T16:00:01.5Z","healthy":true}}})");

    health.queued(t0 + 3s);
    auto late = health.healthz_response(t0 + 63s);
    CHECK(late.status == 503);
    CHECK(late.body ==
          R"({"lastUpdated":"2084-01-29T16:00:01.5Z","currentTime":"2084-01-29T16:01:03Z",)"
          R"("nodeEligible":true,"healthy":false,"status":{)"
          R"("IPv4":{"lastUpdated":"2084-01-29T16:00:01.5Z","healthy":false},)"
          R"("IPv6":{"lastUpdated":"2084-01-29T16:00:01.5Z","healthy":false}}})");
}

TEST_CASE("a Node being deleted or tainted for deletion fails healthz, not livez") {
    ProxierHealth health(60s);
    const auto now = std::chrono::system_clock::time_point{} + 1000000h;
    watch::Node node;
    node.meta.name = "node-a";
    node.taints = {{"node.kubernetes.io/unschedulable", "", "NoSchedule"}};
    CHECK(node_eligible(node));
    health.set_node(&node);
    CHECK(health.healthz_response(now).status == 200);

    node.taints.push_back({watch::kToBeDeletedTaint, "1700000000", "NoSchedule"});
    CHECK_FALSE(node_eligible(node));
    health.set_node(&node);
    auto healthz = health.healthz_response(now);
    CHECK(healthz.status == 503);
    CHECK(healthz.body.find(R"("nodeEligible":false,"healthy":true,)") != std::string::npos);
    auto livez = health.livez_response(now);
    CHECK(livez.status == 200);
    CHECK(livez.body.find("nodeEligible") == std::string::npos);

    watch::Node deleting;
    deleting.being_deleted = true;
    CHECK_FALSE(node_eligible(deleting));
    health.set_node(&deleting);
    CHECK(health.healthz_response(now).status == 503);
    CHECK(health.livez_response(now).status == 200);

    // An unknown Node (a file source without one) counts as eligible.
    health.set_node(nullptr);
    CHECK(health.healthz_response(now).status == 200);
}

TEST_CASE("health checks count distinct ready local IPs per Local service") {
    rules::Plan plan;
    plan.services.push_back(
        local_port("ns", "web", 30001, {{"10.0.0.1", true}, {"10.0.0.2", false}}));
    // A second port of the same Service shares its health check; same IP counts once.
    plan.services.push_back(local_port("ns", "web", 30001, {{"10.0.0.1", true}}));
    plan.services.push_back(local_port("ns", "empty", 30002, {}));
    auto cluster = local_port("ns", "cluster", 30003, {{"10.0.0.3", true}});
    cluster.external_traffic_policy = rules::TrafficPolicy::kCluster;
    plan.services.push_back(cluster);
    plan.services.push_back(local_port("ns", "no-port", 0, {{"10.0.0.4", true}}));

    auto checks = health_checks_of(plan);
    REQUIRE(checks.size() == 2);
    CHECK(checks[30001] == HealthCheckState{"ns", "web", 1});
    CHECK(checks[30002] == HealthCheckState{"ns", "empty", 0});

    auto ok = health_check_response(checks[30001], true);
    CHECK(ok.status == 200);
    CHECK(
        ok.body ==
        R"({"service":{"namespace":"ns","name":"web"},"localEndpoints":1,"serviceProxyHealthy":true})");
    CHECK(health_check_response(checks[30002], true).status == 503);
    CHECK(health_check_response(checks[30001], false).status == 503);
}

TEST_CASE("health-check node ports open and close with the plan") {
    HttpServer server;
    server.start();
    std::atomic<bool> healthy{true};
    HealthCheckPorts ports(server, [&] { return healthy.load(); });
    const std::vector<IpAddress> loopback{*IpAddress::parse("127.0.0.1")};
    const uint16_t a = free_port();
    const uint16_t b = free_port();

    rules::Plan plan;
    plan.services.push_back(local_port("ns", "a", a, {{"10.0.0.1", true}}));
    plan.services.push_back(local_port("ns", "b", b, {}));
    CHECK(ports.update(plan, loopback) == 0);
    CHECK(ports.open().size() == 2);
    auto response = get(a, "/");
    CHECK(status_line(response) == "HTTP/1.1 200 OK");
    CHECK(
        body(response) ==
        R"({"service":{"namespace":"ns","name":"a"},"localEndpoints":1,"serviceProxyHealthy":true})");
    CHECK(response.find("X-Load-Balancing-Endpoint-Weight: 1\r\n") != std::string::npos);
    CHECK(status_line(get(b, "/any/path")) == "HTTP/1.1 503 Service Unavailable");

    // b gains an endpoint, a goes away.
    plan.services = {local_port("ns", "b", b, {{"10.0.0.2", true}})};
    CHECK(ports.update(plan, loopback) == 0);
    CHECK(ports.open().size() == 1);
    CHECK(status_line(get(b, "/")) == "HTTP/1.1 200 OK");
    CHECK(get(a, "/").empty());
    healthy = false;
    CHECK(status_line(get(b, "/")) == "HTTP/1.1 503 Service Unavailable");
}

namespace {

// A socket holding a loopback port with a listener, as another process would.
struct HeldPort {
    int fd = -1;
    uint16_t port = 0;
    HeldPort() {
        fd = socket(AF_INET, SOCK_STREAM, 0);
        REQUIRE(fd >= 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
        REQUIRE(::listen(fd, 1) == 0);
        socklen_t length = sizeof(address);
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
        port = ntohs(address.sin_port);
    }
    void release() {
        if (fd >= 0) close(fd);
        fd = -1;
    }
    ~HeldPort() { release(); }
};

}  // namespace

TEST_CASE("a retrying listener binds once its port is free, and serves") {
    HeldPort held;
    HttpServer server;
    HttpRoutes routes;
    routes["/hello"] = [] { return HttpResponse{200, "text/plain", "hi\n", {}}; };
    std::atomic<unsigned> failures{0};
    std::atomic<unsigned> bound_after{0};
    std::string first_error;
    const int id = server.listen_retrying(
        HostPort{kLoopbackAnyPort.address, held.port}, routes, 20ms,
        [&](const Error& error, unsigned attempt) {
            if (attempt == 1) first_error = error.message;
            failures = attempt;
        },
        [&](unsigned failed) { bound_after = failed; });
    // The first attempt happens inside the call.
    CHECK(failures.load() == 1);
    CHECK(first_error.find("bind 127.0.0.1:" + std::to_string(held.port)) != std::string::npos);
    CHECK(server.port(id) == 0);
    server.start();
    REQUIRE(eventually([&] { return failures.load() >= 3; }));
    CHECK(server.port(id) == 0);

    held.release();
    REQUIRE(eventually([&] { return server.port(id) != 0; }));
    CHECK(server.port(id) == held.port);
    CHECK(bound_after.load() >= 3);
    CHECK(status_line(get(held.port, "/hello")) == "HTTP/1.1 200 OK");
    server.close(id);
    CHECK(get(held.port, "/hello").empty());
}

TEST_CASE("closing a retrying listener stops its retries") {
    HeldPort held;
    HttpServer server;
    std::atomic<unsigned> failures{0};
    const int id = server.listen_retrying(
        HostPort{kLoopbackAnyPort.address, held.port}, {}, 20ms,
        [&](const Error&, unsigned attempt) { failures = attempt; }, [](unsigned) {});
    server.start();
    REQUIRE(eventually([&] { return failures.load() >= 2; }));
    server.close(id);
    held.release();
    const unsigned after_close = failures.load();
    // Ten more periods: no attempt runs, and the freed port stays unbound.
    std::this_thread::sleep_for(200ms);
    CHECK(failures.load() == after_close);
    CHECK(server.port(id) == 0);
    CHECK(get(held.port, "/").empty());
}

TEST_CASE("a free port binds at once through the retrying listener") {
    HttpServer server;
    bool failed = false;
    const int id = server.listen_retrying(
        kLoopbackAnyPort, {}, 20ms, [&](const Error&, unsigned) { failed = true; },
        [](unsigned) {});
    CHECK_FALSE(failed);
    CHECK(server.port(id) != 0);
}

TEST_CASE("health-check node ports listen on every address they are given") {
    HttpServer server;
    server.start();
    HealthCheckPorts ports(server, [] { return true; });
    const uint16_t port = free_port();
    rules::Plan plan;
    plan.services.push_back(local_port("ns", "a", port, {{"10.0.0.1", true}}));
    const std::vector<IpAddress> two{*IpAddress::parse("127.0.0.1"),
                                     *IpAddress::parse("127.0.0.2")};
    CHECK(ports.update(plan, two) == 0);
    CHECK(status_line(get(port, "/", "127.0.0.1")) == "HTTP/1.1 200 OK");
    CHECK(status_line(get(port, "/", "127.0.0.2")) == "HTTP/1.1 200 OK");
    CHECK(get(port, "/", "127.0.0.3").empty());

    // Other addresses: the port moves to them.
    CHECK(ports.update(plan, {*IpAddress::parse("127.0.0.3")}) == 0);
    CHECK(get(port, "/", "127.0.0.1").empty());
    CHECK(status_line(get(port, "/", "127.0.0.3")) == "HTTP/1.1 200 OK");

    // One address taken: nothing of that port stays open, and it is counted.
    HttpServer other;
    REQUIRE(other.listen(HostPort{*IpAddress::parse("127.0.0.2"), port}, {}).ok());
    CHECK(ports.update(plan, two) == 1);
    CHECK(ports.open().empty());
    CHECK(get(port, "/", "127.0.0.1").empty());
}

TEST_CASE("health-check listen addresses follow --nodeport-addresses per family") {
    auto ip = [](const char* text) { return *IpAddress::parse(text); };
    auto prefix = [](const char* text) { return *Prefix::parse(text); };
    const std::vector<IpAddress> dual{ip("127.0.0.1"), ip("192.168.1.5"), ip("10.0.0.5"), ip("::1"),
                                      ip("fd00::5")};
    // None given: both wildcards, a family the node lacks skipped.
    CHECK(health_check_addresses({}, dual) == std::vector{ip("0.0.0.0"), ip("::")});
    CHECK(health_check_addresses({}, {ip("192.168.1.5")}) == std::vector{ip("0.0.0.0")});
    CHECK(health_check_addresses({}, {ip("fd00::5")}) == std::vector{ip("::")});
    // Prefixes: the node's addresses inside them.
    CHECK(health_check_addresses({prefix("192.168.0.0/16"), prefix("fd00::/64")}, dual) ==
          std::vector{ip("192.168.1.5"), ip("fd00::5")});
    CHECK(health_check_addresses({prefix("172.16.0.0/12")}, dual).empty());
    // A whole family: its wildcard, which covers that family's other matches.
    CHECK(health_check_addresses({prefix("0.0.0.0/0"), prefix("10.0.0.0/8"), prefix("fd00::/8")},
                                 dual) == std::vector{ip("0.0.0.0"), ip("fd00::5")});
    CHECK(health_check_addresses({prefix("::/0")}, {ip("10.0.0.5")}).empty());
    CHECK_FALSE(interface_addresses().empty());  // loopback at least
}
