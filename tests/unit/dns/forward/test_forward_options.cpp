// Each forward option of an upstream set, against fake upstreams on
// loopback: which upstream got which query, over which protocol, and what
// the caller got back.
#include <catch.hpp>

#include <algorithm>
#include <array>
#include <memory>

#include "dns/forward/forward.h"
#include "tests/unit/dns/test_forward_fakes.h"

using namespace sb;
using namespace sb::dns;
using namespace sb::dns::testing;
using std::chrono::milliseconds;

namespace {

ForwarderOptions with_set(std::vector<HostPort> upstreams, ForwardSetOptions set) {
    ForwarderOptions options;
    options.upstreams = std::move(upstreams);
    options.options = std::move(set);
    options.attempt_timeout = milliseconds(100);
    options.probe_timeout = milliseconds(50);
    return options;
}

ForwardSetOptions policy(UpstreamPolicy p) {
    ForwardSetOptions set;
    set.policy = p;
    return set;
}

// Which of `upstreams` the next query reaches (waits up to 5 s); answers it.
template <size_t N>
size_t answered_by(std::array<FakeUpstream, N>& upstreams) {
    for (int round = 0; round < 500; ++round) {
        for (size_t i = 0; i < N; ++i) {
            if (upstreams[i].has_query()) {
                upstreams[i].send(reply_to(upstreams[i].receive()));
                return i;
            }
        }
        ::usleep(10000);
    }
    FAIL("no upstream got the query");
    return N;
}

// A UDP fake and a TCP fake, each on a port of its own.
struct FakeUdpOrTcp {
    FakeUpstream udp;
    FakeTcpUpstream tcp;
};

template <size_t N>
std::vector<HostPort> addresses(const std::array<FakeUpstream, N>& upstreams) {
    std::vector<HostPort> result;
    for (const auto& upstream : upstreams) result.push_back(upstream.address);
    return result;
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The value of one sample ("name{labels}") of the forwarder's metrics; 0
// when absent.
uint64_t sample(const Forwarder& forwarder, const std::string& series) {
    const std::string text = metrics_text(forwarder);
    const std::string line = "\n" + series + " ";
    size_t at = text.find(line);
    if (at == std::string::npos) return 0;
    return std::stoull(text.substr(at + line.size()));
}

// Asks www.example.com; the first upstream answers `first`. With
// `next_asked` the second upstream must get the query (it answers
// NOERROR), else it must not. The rcode the caller got.
uint8_t rcode_after_first(Forwarder& forwarder, std::array<FakeUpstream, 2>& upstreams, Rcode first,
                          bool next_asked) {
    Asked asked(forwarder, "www.example.com");
    upstreams[0].send(reply_to(upstreams[0].receive(), first));
    if (next_asked) upstreams[1].send(reply_to(upstreams[1].receive()));
    auto result = asked.get();
    REQUIRE(result.ok());
    if (!next_asked) CHECK_FALSE(upstreams[1].has_query());
    return result->header.rcode;
}

std::string health_failures(const HostPort& upstream) {
    return "coredns_forward_healthcheck_failures_total{to=\"" + upstream.to_string() + "\"}";
}

}  // namespace

TEST_CASE("forward options: round_robin asks the upstreams in turn") {
    std::array<FakeUpstream, 3> upstreams;
    Forwarder forwarder(with_set(addresses(upstreams), policy(UpstreamPolicy::kRoundRobin)));
    REQUIRE(forwarder.start().ok());
    std::vector<size_t> order;
    for (int query = 0; query < 4; ++query) {
        Asked asked(forwarder, "www.example.com");
        order.push_back(answered_by(upstreams));
        CHECK(asked.get().ok());
    }
    CHECK(order == std::vector<size_t>{1, 2, 0, 1});
}

TEST_CASE("forward options: sequential always starts with the first upstream") {
    std::array<FakeUpstream, 2> upstreams;
    Forwarder forwarder(with_set(addresses(upstreams), policy(UpstreamPolicy::kSequential)));
    REQUIRE(forwarder.start().ok());
    // The first is silent once: the second answers that query...
    Asked first(forwarder, "a.example.com");
    upstreams[0].receive();
    upstreams[1].send(reply_to(upstreams[1].receive()));
    CHECK(first.get().ok());
    // ...and the next query still goes to the first.
    Asked second(forwarder, "b.example.com");
    CHECK(answered_by(upstreams) == 0);
    CHECK(second.get().ok());
}

TEST_CASE("forward options: the --dns-upstream default sticks to the upstream that answered") {
    std::array<FakeUpstream, 2> upstreams;
    Forwarder forwarder(with_set(addresses(upstreams), ForwardSetOptions{}));
    REQUIRE(forwarder.start().ok());
    Asked first(forwarder, "a.example.com");
    upstreams[0].receive();
    upstreams[1].send(reply_to(upstreams[1].receive()));
    CHECK(first.get().ok());
    for (int query = 0; query < 3; ++query) {
        Asked next(forwarder, "b.example.com");
        CHECK(answered_by(upstreams) == 1);
        CHECK(next.get().ok());
    }
}

TEST_CASE("forward options: random spreads the queries over every upstream") {
    std::array<FakeUpstream, 2> upstreams;
    Forwarder forwarder(with_set(addresses(upstreams), policy(UpstreamPolicy::kRandom)));
    REQUIRE(forwarder.start().ok());
    std::array<int, 2> counts{};
    // 2^-39 that one of two is never first in 40 fair draws.
    for (int query = 0; query < 40; ++query) {
        Asked asked(forwarder, "www.example.com");
        ++counts[answered_by(upstreams)];
        CHECK(asked.get().ok());
    }
    CHECK(counts[0] > 0);
    CHECK(counts[1] > 0);
}

TEST_CASE("forward options: SERVFAIL goes to the client unless the set tries the next") {
    std::array<FakeUpstream, 2> upstreams;
    ForwardSetOptions set = policy(UpstreamPolicy::kSequential);
    SECTION("CoreDNS: the upstream's SERVFAIL is the answer") {
        set.failover_rcodes = {};
        Forwarder forwarder(with_set(addresses(upstreams), set));
        REQUIRE(forwarder.start().ok());
        CHECK(rcode_after_first(forwarder, upstreams, Rcode::kServFail, false) ==
              static_cast<uint8_t>(Rcode::kServFail));
    }
    SECTION("--dns-upstream: the next upstream is asked") {
        set.failover_rcodes = {2, 5};
        Forwarder forwarder(with_set(addresses(upstreams), set));
        REQUIRE(forwarder.start().ok());
        CHECK(rcode_after_first(forwarder, upstreams, Rcode::kServFail, true) ==
              static_cast<uint8_t>(Rcode::kNoError));
    }
}

TEST_CASE("forward options: max_concurrent refuses the queries over the limit") {
    FakeUpstream upstream;
    ForwardSetOptions set;
    set.max_concurrent = 1;
    ForwarderOptions options = with_set({upstream.address}, set);
    options.attempt_timeout = milliseconds(5000);
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    Asked held(forwarder, "held.example.com");
    Message query = upstream.receive();  // in flight, not answered yet
    Asked over(forwarder, "over.example.com");
    auto refused = over.get();
    REQUIRE(refused.ok());
    CHECK(refused->header.rcode == static_cast<uint8_t>(Rcode::kRefused));
    CHECK(refused->questions.at(0).name == *name_from_text("over.example.com"));
    CHECK_FALSE(upstream.has_query());
    CHECK(contains(metrics_text(forwarder), "coredns_forward_max_concurrent_rejects_total 1\n"));
    upstream.send(reply_to(query));
    CHECK(held.get().ok());
    // Back under the limit: forwarded again.
    CHECK(ask_at(forwarder, "after.example.com", upstream).ok());
}

TEST_CASE("forward options: except keeps names from this forward, FROM itself excepted") {
    FakeUpstream fallback;
    FakeUpstream corp;
    FakeUpstream consul;
    ForwardSetOptions root;
    root.except = {name_lower(*name_from_text("example.org"))};
    ForwarderOptions options = with_set({fallback.address}, root);
    StubZone corp_set = stub("corp.example", {corp.address});
    corp_set.cluster_block = true;  // the kubernetes block's `forward corp.example`
    corp_set.options.except = {name_lower(*name_from_text("lab.corp.example"))};
    StubZone consul_block = stub("consul.local", {consul.address});  // a block of its own
    consul_block.options.except = {name_lower(*name_from_text("consul.local"))};
    options.stubs = {corp_set, consul_block};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());

    // Under the default set's except, no other forward: an error, no query.
    CHECK_FALSE(Asked(forwarder, "www.example.org").get().ok());
    CHECK_FALSE(Asked(forwarder, "example.org").get().ok());
    // The kubernetes block's next forward takes what corp.example excepts.
    CHECK(ask_at(forwarder, "www.corp.example", corp).ok());
    CHECK(ask_at(forwarder, "db.lab.corp.example", fallback).ok());
    // Another server block has no other forward: an error. Its zone itself
    // is forwarded although excepted (CoreDNS's isAllowedDomain).
    CHECK(ask_at(forwarder, "consul.local", consul).ok());
    CHECK_FALSE(Asked(forwarder, "web.consul.local").get().ok());
    CHECK_FALSE(fallback.has_query());
    CHECK_FALSE(corp.has_query());
    CHECK_FALSE(consul.has_query());
}

TEST_CASE("forward options: the protocol asked upstream") {
    struct Case {
        UpstreamProtocol protocol;
        ClientProtocol client;
        bool tcp;  // what the upstream must be asked over
    };
    const Case cases[] = {
        {UpstreamProtocol::kTcp, ClientProtocol::kUdp, true},      // force_tcp
        {UpstreamProtocol::kTcp, ClientProtocol::kTcp, true},      //
        {UpstreamProtocol::kClient, ClientProtocol::kTcp, true},   // CoreDNS's default
        {UpstreamProtocol::kClient, ClientProtocol::kUdp, false},  //
        {UpstreamProtocol::kUdp, ClientProtocol::kTcp, false},     // prefer_udp
        {UpstreamProtocol::kUdp, ClientProtocol::kUdp, false},     //
    };
    for (const Case& c : cases) {
        // The forwarder knows one fake, which serves one protocol only: the
        // query is answered only when asked over that one.
        FakeUdpOrTcp udp_or_tcp;
        ForwardSetOptions set;
        set.protocol = c.protocol;
        Forwarder forwarder(
            with_set({c.tcp ? udp_or_tcp.tcp.address : udp_or_tcp.udp.address}, set));
        REQUIRE(forwarder.start().ok());
        if (c.tcp) {
            CHECK(ask_at(forwarder, "a.example.com", udp_or_tcp.tcp, c.client).ok());
        } else {
            CHECK(ask_at(forwarder, "a.example.com", udp_or_tcp.udp, c.client).ok());
        }
    }
}

TEST_CASE("forward options: a truncated UDP reply is asked again over TCP") {
    FakeUpstream udp;
    FakeTcpUpstream tcp(udp.address);  // the same address and port
    ForwardSetOptions set;
    set.protocol = UpstreamProtocol::kUdp;
    Forwarder forwarder(with_set({udp.address}, set));
    REQUIRE(forwarder.start().ok());
    Asked asked(forwarder, "big.example.com");
    Message truncated = reply_to(udp.receive());
    truncated.header.tc = true;
    udp.send(truncated);
    tcp.send(reply_to(tcp.receive()));
    auto result = asked.get();
    REQUIRE(result.ok());
    CHECK_FALSE(result->header.tc);
    CHECK(sample(forwarder, "switchboard_dns_forward_tcp_retries_total") == 1);
}

TEST_CASE("forward options: a TCP upstream that fails is followed by the next one") {
    FakeTcpUpstream closed;
    const HostPort closed_address = closed.address;
    ::close(closed.listener);
    closed.listener = ::socket(AF_INET, SOCK_STREAM, 0);  // refused from now on
    FakeTcpUpstream answering;
    ForwardSetOptions set = policy(UpstreamPolicy::kSequential);
    set.protocol = UpstreamProtocol::kTcp;
    Forwarder forwarder(with_set({closed_address, answering.address}, set));
    REQUIRE(forwarder.start().ok());
    CHECK(ask_at(forwarder, "www.example.com", answering).ok());
}

TEST_CASE("forward options: failed exchanges start health probes; a down upstream is skipped") {
    FakeUpstream flaky;  // silent: queries and probes time out
    FakeUpstream steady;
    ForwardSetOptions set = policy(UpstreamPolicy::kSequential);
    set.max_fails = 2;
    set.health_check = milliseconds(20);
    Forwarder forwarder(with_set({flaky.address, steady.address}, set));
    REQUIRE(forwarder.start().ok());
    const std::string flaky_to = flaky.address.to_string();

    // The first exchange with flaky times out: steady answers, probing starts.
    Asked first(forwarder, "a.example.com");
    flaky.receive();
    steady.send(reply_to(steady.receive()));
    CHECK(first.get().ok());
    // Down after more than max_fails failed probes: `. IN NS`, recursion desired.
    for (int i = 0; i < 500 && sample(forwarder, health_failures(flaky.address)) < 3; ++i) {
        Message probe = flaky.receive();
        CHECK(probe.questions.at(0).name == *name_from_text("."));
        CHECK(probe.questions.at(0).qtype == type::kNS);
        CHECK(probe.header.rd);
    }
    const std::string metrics = metrics_text(forwarder);
    CHECK(
        contains(metrics, "coredns_proxy_healthcheck_failures_total{proxy_name=\"forward\",to=\"" +
                              flaky_to + "\"}"));

    // Down: sequential skips it, straight to steady.
    Asked skipped(forwarder, "b.example.com");
    steady.send(reply_to(steady.receive()));
    CHECK(skipped.get().ok());
    for (const auto& name : flaky.drain_names()) CHECK(name == ".");

    // A probe answered (any rcode): up again, asked first again.
    Message probe = flaky.receive();
    flaky.send(reply_to(probe, Rcode::kRefused));
    bool back = false;
    for (int i = 0; i < 200 && !back; ++i) {
        Asked asked(forwarder, "c.example.com");
        for (int wait = 0; wait < 500; ++wait) {
            if (flaky.has_query()) {
                Message query = flaky.receive();
                if (query.questions.at(0).qtype == type::kNS) {
                    flaky.send(reply_to(query));
                    continue;
                }
                flaky.send(reply_to(query));
                back = true;
                break;
            }
            if (steady.has_query()) {
                steady.send(reply_to(steady.receive()));
                break;
            }
            ::usleep(2000);
        }
        CHECK(asked.get().ok());
    }
    CHECK(back);
}

TEST_CASE("forward options: every upstream down: a random one is asked, counted as broken") {
    FakeUpstream silent;
    ForwardSetOptions set;
    set.max_fails = 1;
    set.health_check = milliseconds(20);
    Forwarder forwarder(with_set({silent.address}, set));
    REQUIRE(forwarder.start().ok());
    CHECK_FALSE(Asked(forwarder, "a.example.com").get().ok());  // 3 attempts time out
    for (int i = 0; i < 500 && sample(forwarder, health_failures(silent.address)) < 2; ++i) {
        silent.receive();
    }
    CHECK(sample(forwarder, "coredns_forward_healthcheck_broken_total") == 0);
    Asked asked(forwarder, "b.example.com");
    bool asked_there = false;
    for (int i = 0; i < 50 && !asked_there; ++i) {
        Message query = silent.receive();
        // Not a probe, nor a late attempt of the first query.
        if (query.questions.at(0).name == *name_from_text("b.example.com")) {
            silent.send(reply_to(query));
            asked_there = true;
        }
    }
    CHECK(asked_there);
    CHECK(asked.get().ok());
    CHECK(sample(forwarder, "coredns_forward_healthcheck_broken_total") == 1);
}

TEST_CASE("forward options: per-upstream metrics with CoreDNS's names and labels") {
    FakeUpstream upstream;
    Forwarder forwarder(with_set({upstream.address}, ForwardSetOptions{}));
    REQUIRE(forwarder.start().ok());
    Asked asked(forwarder, "www.example.com");
    upstream.send(reply_to(upstream.receive(), Rcode::kNXDomain));
    CHECK(asked.get().ok());
    const std::string to = upstream.address.to_string();
    const std::string text = metrics_text(forwarder);
    CHECK(contains(text, "coredns_forward_requests_total{to=\"" + to + "\"} 1\n"));
    CHECK(contains(text,
                   "coredns_forward_responses_total{rcode=\"NXDOMAIN\",to=\"" + to + "\"} 1\n"));
    CHECK(contains(text, "coredns_forward_request_duration_seconds_count{to=\"" + to +
                             "\",rcode=\"NXDOMAIN\"} 1\n"));
    CHECK(contains(text, "coredns_forward_request_duration_seconds_bucket{to=\"" + to +
                             "\",rcode=\"NXDOMAIN\",le=\"0.00025\"}"));
    CHECK(contains(text, "coredns_forward_request_duration_seconds_bucket{to=\"" + to +
                             "\",rcode=\"NXDOMAIN\",le=\"8.192\"}"));
    CHECK(
        contains(text, "coredns_proxy_request_duration_seconds_count{proxy_name=\"forward\",to=\"" +
                           to + "\",rcode=\"NXDOMAIN\"} 1\n"));
    CHECK(contains(text, "coredns_forward_healthcheck_broken_total 0\n"));
    CHECK(contains(text, "coredns_forward_max_concurrent_rejects_total 0\n"));
    CHECK(contains(text, "# TYPE coredns_forward_healthcheck_failures_total counter\n"));
    CHECK(contains(text, "# TYPE coredns_proxy_healthcheck_failures_total counter\n"));
}

TEST_CASE("forward options: rcode labels are CoreDNS's") {
    CHECK(rcode_label(0) == "NOERROR");
    CHECK(rcode_label(5) == "REFUSED");
    CHECK(rcode_label(9) == "NOTAUTH");
    CHECK(rcode_label(15) == "15");
}

TEST_CASE("forward options: failover tries the next upstream on its rcodes only") {
    std::array<FakeUpstream, 2> upstreams;
    ForwardSetOptions set = policy(UpstreamPolicy::kSequential);
    set.failover_rcodes = {static_cast<uint8_t>(Rcode::kNXDomain)};
    Forwarder forwarder(with_set(addresses(upstreams), set));
    REQUIRE(forwarder.start().ok());
    // A failover rcode: the next upstream answers; another is the answer.
    CHECK(rcode_after_first(forwarder, upstreams, Rcode::kNXDomain, true) ==
          static_cast<uint8_t>(Rcode::kNoError));
    CHECK(rcode_after_first(forwarder, upstreams, Rcode::kServFail, false) ==
          static_cast<uint8_t>(Rcode::kServFail));
}

TEST_CASE("forward options: max_connect_attempts bounds the attempts of one query") {
    std::array<FakeUpstream, 3> silent;
    ForwardSetOptions set = policy(UpstreamPolicy::kSequential);
    set.max_attempts = 1;
    Forwarder forwarder(with_set(addresses(silent), set));
    REQUIRE(forwarder.start().ok());
    CHECK_FALSE(Asked(forwarder, "www.example.com").get().ok());
    CHECK(silent[0].has_query());
    CHECK_FALSE(silent[1].has_query());
    CHECK_FALSE(silent[2].has_query());
}

TEST_CASE("forward options: source_address is the upstream socket's local address") {
    FakeUpstream upstream;
    ForwardSetOptions set;
    // Another loopback address than the upstream's (127.0.0.1): seen only
    // when the socket was bound to it.
    set.source = IpAddress::parse("127.0.0.2").value();
    Forwarder forwarder(with_set({upstream.address}, set));
    REQUIRE(forwarder.start().ok());
    Asked asked(forwarder, "www.example.com");
    upstream.send(reply_to(upstream.receive()));
    CHECK(asked.get().ok());
    const auto* from = reinterpret_cast<const sockaddr_in*>(&upstream.client);
    CHECK(from->sin_addr.s_addr == htonl(0x7f000002));
    SECTION("an address of another family: every attempt fails, none is sent") {
        set.source = IpAddress::parse("::1").value();
        Forwarder mismatched(with_set({upstream.address}, set));
        REQUIRE(mismatched.start().ok());
        CHECK_FALSE(Asked(mismatched, "www.example.com").get().ok());
        CHECK_FALSE(upstream.has_query());
    }
}

TEST_CASE("forward options: failfast_all_unhealthy_upstreams fails when every upstream is down") {
    FakeUpstream silent;
    ForwardSetOptions set;
    set.max_fails = 1;
    set.health_check = milliseconds(20);
    set.failfast_all_down = true;
    Forwarder forwarder(with_set({silent.address}, set));
    REQUIRE(forwarder.start().ok());
    CHECK_FALSE(Asked(forwarder, "a.example.com").get().ok());  // 3 attempts time out
    for (int i = 0; i < 500 && sample(forwarder, health_failures(silent.address)) < 2; ++i) {
        silent.receive();
    }
    auto result = Asked(forwarder, "b.example.com").get();
    CHECK_FALSE(result.ok());
    CHECK(sample(forwarder, "coredns_forward_healthcheck_broken_total") == 1);
}
