// The forwarder against a fake upstream socket on loopback.
#include <catch.hpp>

#include <future>

#include "dns/forward/forward.h"
#include "tests/unit/dns/test_forward_fakes.h"

using namespace sb;
using namespace sb::dns;
using namespace sb::dns::testing;

TEST_CASE("forwarder: replies with another ID or question are ignored") {
    FakeUpstream upstream;
    ForwarderOptions options;
    options.upstreams = {upstream.address};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    std::promise<Result<Message>> done;
    forwarder.submit(question("www.example.com"),
                     [&done](Result<Message> reply) { done.set_value(std::move(reply)); });
    Message query = upstream.receive();
    CHECK(query.header.rd);
    CHECK(query.edns.has_value());

    Message reply = query;
    reply.header.qr = true;
    reply.edns.reset();
    reply.answers.push_back({query.questions[0].name, type::kA, kClassIN, 60,
                             rdata_address(*IpAddress::parse("192.0.2.1"))});
    Message wrong_id = reply;
    wrong_id.header.id = static_cast<uint16_t>(reply.header.id + 1);
    upstream.send(wrong_id);
    Message wrong_question = reply;
    wrong_question.questions[0].name = *name_from_text("evil.example.com");
    upstream.send(wrong_question);
    upstream.send(reply);

    auto future = done.get_future();
    REQUIRE(future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    auto result = future.get();
    REQUIRE(result.ok());
    CHECK(result->answers.size() == 1);
    CHECK(result->questions[0].name == *name_from_text("www.example.com"));
    forwarder.stop();
}

TEST_CASE("forwarder: a silent upstream fails over, then reports an error") {
    FakeUpstream silent;
    FakeUpstream answering;
    ForwarderOptions options;
    options.upstreams = {silent.address, answering.address};
    options.attempt_timeout = std::chrono::milliseconds(100);
    options.max_attempts = 2;
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    std::promise<Result<Message>> done;
    forwarder.submit(question("a.example.com"),
                     [&done](Result<Message> reply) { done.set_value(std::move(reply)); });
    silent.receive();  // first attempt, never answered
    Message query = answering.receive();
    Message reply = query;
    reply.header.qr = true;
    reply.header.rcode = static_cast<uint8_t>(Rcode::kNXDomain);
    answering.send(reply);
    auto future = done.get_future();
    REQUIRE(future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    auto result = future.get();
    REQUIRE(result.ok());
    CHECK(result->header.rcode == static_cast<uint8_t>(Rcode::kNXDomain));

    // Both silent now: every attempt times out and the caller gets an error.
    std::promise<Result<Message>> failed;
    forwarder.submit(question("b.example.com"),
                     [&failed](Result<Message> reply) { failed.set_value(std::move(reply)); });
    auto failed_future = failed.get_future();
    REQUIRE(failed_future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
    CHECK_FALSE(failed_future.get().ok());
    sb::metrics::TextWriter writer;
    forwarder.append_metrics(writer);
    const std::string metrics = writer.text();
    CHECK(metrics.find("switchboard_dns_upstream_errors_total{kind=\"exhausted\"} 1") !=
          std::string::npos);
    forwarder.stop();
}

TEST_CASE("forwarder: an upstream that is our own listen address is dropped") {
    ForwarderOptions options;
    options.upstreams = {*parse_host_port("127.0.0.1:5353"), *parse_host_port("10.0.0.1:53")};
    Forwarder forwarder(options);
    forwarder.drop_self({*parse_host_port("0.0.0.0:5353")});
    CHECK(forwarder.enabled());
    forwarder.drop_self({*parse_host_port("10.0.0.1:53")});
    CHECK_FALSE(forwarder.enabled());
}

TEST_CASE("forwarder: a stub zone's names go to its upstreams, the longest zone wins") {
    FakeUpstream fallback;
    FakeUpstream consul;
    FakeUpstream dc1;
    ForwarderOptions options;
    options.upstreams = {fallback.address};
    options.stubs = {stub("dc1.consul.local", {dc1.address}),
                     stub("consul.local", {consul.address})};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    CHECK(ask_at(forwarder, "web.service.Consul.Local", consul).ok());
    CHECK(ask_at(forwarder, "consul.local", consul).ok());
    CHECK(ask_at(forwarder, "db.dc1.consul.local", dc1).ok());
    // A label boundary: "notconsul.local" is not under "consul.local".
    CHECK(ask_at(forwarder, "notconsul.local", fallback).ok());
    CHECK(ask_at(forwarder, "www.example.com", fallback).ok());
    // Every query above went to exactly one upstream.
    CHECK_FALSE(fallback.has_query());
    CHECK_FALSE(consul.has_query());
    CHECK_FALSE(dc1.has_query());
    forwarder.stop();
}

TEST_CASE("forwarder: a stub zone never falls back to the default upstreams") {
    FakeUpstream fallback;
    FakeUpstream silent;
    ForwarderOptions options;
    options.upstreams = {fallback.address};
    options.stubs = {stub("consul.local", {silent.address}), stub("corp.example", {})};
    options.attempt_timeout = std::chrono::milliseconds(100);
    options.max_attempts = 3;
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    auto fails = [&forwarder](const char* name) {
        std::promise<Result<Message>> done;
        forwarder.submit(question(name),
                         [&done](Result<Message> reply) { done.set_value(std::move(reply)); });
        auto future = done.get_future();
        REQUIRE(future.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
        return !future.get().ok();
    };
    // Its only upstream is silent: every attempt goes there, then an error.
    CHECK(fails("a.consul.local"));
    silent.receive();
    // No upstream at all, and its only upstream dropped as our own address.
    CHECK(fails("b.corp.example"));
    forwarder.drop_self({silent.address});
    CHECK(forwarder.enabled());
    CHECK(fails("c.consul.local"));
    CHECK_FALSE(fallback.has_query());
    CHECK(ask_at(forwarder, "www.example.com", fallback).ok());
    forwarder.stop();
}

TEST_CASE("forwarder: a root stub zone takes every name no longer stub zone has") {
    FakeUpstream fallback;
    FakeUpstream root;
    FakeUpstream consul;
    ForwarderOptions options;
    options.upstreams = {fallback.address};
    options.stubs = {stub(".", {root.address}), stub("consul.local", {consul.address})};
    Forwarder forwarder(options);
    REQUIRE(forwarder.start().ok());
    CHECK(ask_at(forwarder, "www.example.com", root).ok());
    CHECK(ask_at(forwarder, "a.consul.local", consul).ok());
    CHECK_FALSE(fallback.has_query());
    forwarder.stop();
}
