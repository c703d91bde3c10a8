// The forwarder's defences against a hostile client or an off-path sender
// (issue 10), against fake upstreams on loopback.
#include <catch.hpp>

#include <future>
#include <set>

#include "dns/forward/forward.h"
#include "dns/forward/upstream_exchange.h"
#include "tests/unit/dns/test_forward_fakes.h"

using namespace sb;
using namespace sb::dns;
using namespace sb::dns::testing;

namespace {

uint16_t client_port(const FakeUpstream& upstream) {
    return from_socket_address(upstream.client).port;
}

bool has_line(const std::string& text, const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("forwarder abuse: each query comes from its own port with a fresh ID") {
    FakeUpstream upstream;
    ForwarderOptions options;
    options.upstreams = {upstream.address};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    std::set<uint16_t> ports;
    for (int i = 0; i < 8; ++i) {
        std::string name = "p" + std::to_string(i) + ".example.com";
        REQUIRE(ask_at(forwarder, name.c_str(), upstream).ok());
        ports.insert(client_port(upstream));
    }
    // Random ephemeral ports: 8 draws from ~28000 collide rarely.
    CHECK(ports.size() >= 7);
    forwarder.stop();
}

TEST_CASE("forwarder abuse: a reply with QR=0 is dropped and counted") {
    FakeUpstream upstream;
    ForwarderOptions options;
    options.upstreams = {upstream.address};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    Asked asked(forwarder, "www.example.com");
    Message query = upstream.receive();
    Message spoofed = query;  // QR=0: a query sent back, or a forged one
    spoofed.answers.push_back({query.questions[0].name, type::kA, kClassIN, 60,
                               rdata_address(*IpAddress::parse("192.0.2.66"))});
    upstream.send(spoofed);
    upstream.send(reply_to(query));
    auto result = asked.get();
    REQUIRE(result.ok());
    CHECK(result->answers.empty());
    const std::string metrics = metrics_text(forwarder);
    CHECK(has_line(metrics,
                   "switchboard_dns_forward_replies_dropped_total{reason=\"not_a_response\"} 1"));
    forwarder.stop();
}

TEST_CASE("forwarder abuse: identical questions in flight share one upstream query") {
    FakeUpstream upstream;
    ForwarderOptions options;
    options.upstreams = {upstream.address};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    Asked first(forwarder, "same.example.com");
    Message query = upstream.receive();
    const sockaddr_storage first_socket = upstream.client;  // receive() overwrites it
    // The same question in another case: merged; another type: not.
    Asked second(forwarder, "SAME.example.com");
    Asked third(forwarder, "same.example.com");
    std::promise<Result<Message>> aaaa_done;
    forwarder.submit({*name_from_text("same.example.com"), type::kAAAA, kClassIN},
                     [&aaaa_done](Result<Message> r) { aaaa_done.set_value(std::move(r)); });
    Message aaaa = upstream.receive();
    CHECK(aaaa.questions.at(0).qtype == type::kAAAA);
    upstream.send(reply_to(aaaa));
    REQUIRE(aaaa_done.get_future().get().ok());
    // The AAAA query went out after the A ones were submitted: they are merged by now.
    upstream.client = first_socket;
    Message reply = reply_to(query);
    reply.answers.push_back({query.questions[0].name, type::kA, kClassIN, 60,
                             rdata_address(*IpAddress::parse("192.0.2.1"))});
    upstream.send(reply);
    for (Asked* asked : {&first, &second, &third}) {
        auto result = asked->get();
        REQUIRE(result.ok());
        CHECK(result->answers.size() == 1);
    }
    CHECK_FALSE(upstream.has_query());
    CHECK(has_line(metrics_text(forwarder), "switchboard_dns_forward_merged_total 2"));
    // Done: the next identical question is a new upstream query.
    CHECK(ask_at(forwarder, "same.example.com", upstream).ok());
    forwarder.stop();
}

TEST_CASE("forwarder abuse: a client over its cap is REFUSED, others still forwarded") {
    FakeUpstream upstream;
    ForwarderOptions options;
    options.upstreams = {upstream.address};
    options.max_outstanding_per_client = 2;
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    const IpAddress greedy = *IpAddress::parse("10.0.0.1");
    const IpAddress other = *IpAddress::parse("10.0.0.2");
    auto submit = [&forwarder](const char* name, const IpAddress& client) {
        auto promise = std::make_shared<std::promise<Result<Message>>>();
        forwarder.submit(
            question(name), [promise](Result<Message> r) { promise->set_value(std::move(r)); },
            ClientProtocol::kUdp, client);
        return promise->get_future();
    };
    auto a = submit("a.example.com", greedy);
    auto b = submit("b.example.com", greedy);
    auto c = submit("c.example.com", greedy);
    REQUIRE(c.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    auto refused = c.get();
    REQUIRE(refused.ok());
    CHECK(refused->header.rcode == static_cast<uint8_t>(Rcode::kRefused));
    auto d = submit("d.example.com", other);
    std::set<std::string> names;
    std::vector<Message> queries;
    for (int i = 0; i < 3; ++i) {
        queries.push_back(upstream.receive());
        names.insert(name_to_text(queries.back().questions.at(0).name));
        upstream.send(reply_to(queries.back()));
    }
    CHECK(names == std::set<std::string>{"a.example.com.", "b.example.com.", "d.example.com."});
    for (auto* done : {&a, &b, &d}) {
        REQUIRE(done->wait_for(std::chrono::seconds(5)) == std::future_status::ready);
        CHECK(done->get()->header.rcode == static_cast<uint8_t>(Rcode::kNoError));
    }
    // Its queries answered, the client may ask again.
    auto e = submit("e.example.com", greedy);
    upstream.send(reply_to(upstream.receive()));
    REQUIRE(e.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK(e.get()->header.rcode == static_cast<uint8_t>(Rcode::kNoError));
    CHECK(
        has_line(metrics_text(forwarder), "switchboard_dns_forward_client_limit_rejected_total 1"));
    forwarder.stop();
}

TEST_CASE("forwarder abuse: loop probes go under the set's zone, again periodically") {
    FakeUpstream root;
    FakeUpstream corp;
    ForwarderOptions options;
    options.upstreams = {root.address};
    options.stubs = {stub("corp.example", {corp.address})};
    options.loop_check_interval = std::chrono::milliseconds(100);
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    // Sent by the loop every 100 ms, without send_loop_probes().
    Message probe = root.receive();
    Message again = root.receive();
    CHECK(probe.questions.at(0).qtype == type::kHINFO);
    const std::string name = name_to_text(probe.questions.at(0).name);
    CHECK(name.rfind("sb-loop-", 0) == 0);
    // <label>.<number>.: the number is the top-level label, never delegated.
    CHECK(name_label_count(probe.questions.at(0).name) == 2);
    CHECK(again.questions.at(0).name == probe.questions.at(0).name);
    Message corp_probe = corp.receive();
    const std::string lower_corp = name_lower(corp_probe.questions.at(0).name);
    CHECK(name_is_under(lower_corp, *name_from_text("corp.example")));
    CHECK(name_label_count(lower_corp) == 4);
    CHECK(name_first_label(lower_corp) == name_first_label(probe.questions.at(0).name));
    // Not a probe: another random label, or ours under another zone.
    CHECK_FALSE(forwarder.loop_detected(*name_from_text("sb-loop-0.1.corp.example")));
    CHECK(forwarder.enabled());
    CHECK(forwarder.loop_detected(lower_corp));
    CHECK(forwarder.enabled());  // the root set's upstream is still usable
    CHECK(forwarder.loop_detected(name_lower(probe.questions.at(0).name)));
    CHECK_FALSE(forwarder.enabled());
    forwarder.stop();
}

TEST_CASE("forwarder abuse: a health probe's exchange ignores its query echoed back") {
    FakeUpstream upstream;
    Message ping;
    ping.header.id = 0x4242;
    ping.questions.push_back({*name_from_text("."), type::kNS, kClassIN});
    auto exchange = std::async(std::launch::async, [&] {
        return udp_exchange(upstream.address, write_message(ping).bytes,
                            std::chrono::milliseconds(5000));
    });
    Message query = upstream.receive();
    upstream.send(query);  // QR=0, our ID: a reflection, not an answer
    upstream.send(reply_to(query, Rcode::kRefused));
    auto reply = exchange.get();
    REQUIRE(reply.ok());
    CHECK(reply->header.qr);
    CHECK(reply->header.rcode == static_cast<uint8_t>(Rcode::kRefused));
}
