// CoreDNS's prometheus, health and ready endpoints over loopback, read from
// a Corefile, with a real Store and a real DnsService behind /ready.
#include <catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "base/metrics.h"
#include "dns/corefile/grammar.h"
#include "dns/dns_service.h"
#include "proxy/http/coredns_endpoints.h"
#include "proxy/http/server.h"
#include "tests/unit/proxy/http/http_client.h"
#include "watch/store.h"

using namespace sb;
using namespace sb::proxy;
using namespace sb::proxy::test;
using namespace std::chrono_literals;

namespace {

dns::CorefileConfig corefile(const std::string& text) {
    auto parsed = dns::parse_corefile(text, "Corefile", nullptr);
    REQUIRE(parsed);
    auto config = dns::map_corefile(*parsed, "Corefile");
    REQUIRE(config);
    return *config;
}

const dns::HttpListen kLoopbackAnyPort{"127.0.0.1", 0};

// Polls `answer` until it equals `want`; bounded, only a broken server
// reaches the limit.
bool eventually(const std::function<std::string()>& answer, const std::string& want) {
    for (int i = 0; i < 200; ++i) {
        if (answer() == want) return true;
        std::this_thread::sleep_for(50ms);
    }
    return false;
}

// A UDP socket holding a loopback port, so that a DNS listener there cannot bind.
struct HeldUdpPort {
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    uint16_t port = 0;
    HeldUdpPort() {
        REQUIRE(fd >= 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
        socklen_t length = sizeof(address);
        REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
        port = ntohs(address.sin_port);
    }
    void release() {
        if (fd >= 0) close(fd);
        fd = -1;
    }
    ~HeldUdpPort() { release(); }
};

}  // namespace

TEST_CASE("coredns_endpoints_config: kubeadm's Corefile, addresses shared across server blocks") {
    auto config = coredns_endpoints_config(corefile(R"(.:53 {
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa
    prometheus :9153
    forward . )" SWITCHBOARD_TEST_DATA R"(/resolv.conf
}
consul.local:53 {
    forward . 10.0.0.5
    prometheus :9153
    health 127.0.0.1:8090 {
       lameduck 7s
    }
}
)"));
    REQUIRE(config.prometheus == std::vector<dns::HttpListen>{{"", 9153}});
    REQUIRE(config.health == std::vector<dns::HttpListen>{{"", 8080}, {"127.0.0.1", 8090}});
    REQUIRE(config.ready == std::vector<dns::HttpListen>{{"", 8181}});
    REQUIRE(config.lameduck == 7s);

    REQUIRE(coredns_endpoints_config(corefile(".:53 {\n kubernetes cluster.local\n}\n")).empty());
}

TEST_CASE("bind_address: every address is [::] (or 0.0.0.0 without IPv6), localhost 127.0.0.1") {
    REQUIRE(bind_address({"", 9153}, true).to_string() == "[::]:9153");
    REQUIRE(bind_address({"", 9153}, false).to_string() == "0.0.0.0:9153");
    REQUIRE(bind_address({"localhost", 9153}, true).to_string() == "127.0.0.1:9153");
    REQUIRE(bind_address({"10.0.0.1", 8181}, true).to_string() == "10.0.0.1:8181");
}

TEST_CASE("/ready is 503 naming what is not ready, then 200 OK once synced and serving") {
    watch::Store store;
    HeldUdpPort held;
    dns::DnsOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), held.port}};
    options.upstreams = {HostPort{*IpAddress::parse("127.0.0.1"), 1}};
    options.workers = 1;
    auto service = dns::DnsService::start(options, store);
    REQUIRE(service);
    dns::DnsService& dns = **service;

    HttpServer http;
    CorednsEndpointsConfig config;
    config.ready = {kLoopbackAnyPort};
    CorednsEndpoints endpoints(http, config,
                               {[&store] { return store.snapshot()->synced(); },
                                [&dns] { return dns.serving(); }, [] { return std::string(); }});
    http.start();
    const uint16_t port = endpoints.port("/ready");
    REQUIRE(port != 0);
    REQUIRE(endpoints.port("/health") == 0);

    auto ready = [port] {
        auto response = get(port, "/ready");
        return status_line(response) + " " + body(response);
    };
    REQUIRE(ready() == "HTTP/1.1 503 Service Unavailable dns,kubernetes");
    store.set_synced(true);
    REQUIRE(ready() == "HTTP/1.1 503 Service Unavailable dns");
    held.release();  // the DNS listener's retry binds it now
    REQUIRE(eventually(ready, "HTTP/1.1 200 OK OK"));
    dns.stop();
}

TEST_CASE("/health and /ready on one address share a listener; /metrics serves the probe's text") {
    HttpServer http;
    CorednsEndpointsConfig config;
    config.health = {{"127.0.0.1", 0}};
    config.ready = {{"localhost", 0}};       // the same address once resolved
    config.prometheus = {{"127.0.0.2", 0}};  // another address: a listener of its own
    CorednsEndpoints endpoints(
        http, config,
        {[] { return true; }, [] { return true; },
         [] {
             metrics::TextWriter out;
             out.family({"coredns_panics_total", "Panics.", metrics::Type::kCounter, {}});
             out.sample({}, uint64_t{0});
             return out.text();
         }});
    http.start();
    REQUIRE(endpoints.port("/health") != 0);
    REQUIRE(endpoints.port("/health") == endpoints.port("/ready"));
    auto health = get(endpoints.port("/health"), "/health");
    REQUIRE(status_line(health) == "HTTP/1.1 200 OK");
    REQUIRE(body(health) == "OK");
    REQUIRE(body(get(endpoints.port("/ready"), "/ready")) == "OK");
    auto metrics = get(endpoints.port("/metrics"), "/metrics", "127.0.0.2");
    REQUIRE(status_line(metrics) == "HTTP/1.1 200 OK");
    REQUIRE(body(metrics).find("coredns_panics_total 0\n") != std::string::npos);
    REQUIRE(status_line(get(endpoints.port("/metrics"), "/health", "127.0.0.2")) ==
            "HTTP/1.1 404 Not Found");
}

TEST_CASE("lameduck: /health goes on answering for the lameduck before the caller stops") {
    HttpServer http;
    CorednsEndpointsConfig config;
    config.health = {kLoopbackAnyPort};
    config.lameduck = 300ms;
    CorednsEndpoints endpoints(http, config,
                               {[] { return true; }, [] { return true; }, [] { return ""; }});
    http.start();
    const uint16_t port = endpoints.port("/health");
    REQUIRE(port != 0);

    std::atomic<bool> done{false};
    const auto asked = std::chrono::steady_clock::now();
    std::thread stopping([&] {
        endpoints.lameduck([] { return false; });
        done = true;
    });
    // Answered while the lameduck lasts (the first request is well within it).
    REQUIRE(body(get(port, "/health")) == "OK");
    stopping.join();
    REQUIRE(done);
    REQUIRE(std::chrono::steady_clock::now() - asked >= 300ms);
    REQUIRE(body(get(port, "/health")) == "OK");  // still up until the caller stops
    http.stop();
    REQUIRE(get(port, "/health").empty());
}

TEST_CASE("coredns_build_info: switchboard's version, no revision, the C++ toolchain") {
    metrics::TextWriter out;
    write_coredns_build_info(out, BuildInfo{"0.3.0", "clang", "16.0.6", "linux/amd64"});
    REQUIRE(out.text().find("coredns_build_info{version=\"0.3.0\",revision=\"\","
                            "goversion=\"clang 16.0.6\"} 1\n") != std::string::npos);
}
