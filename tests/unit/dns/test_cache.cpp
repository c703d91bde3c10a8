#include <catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "dns/cache.h"
#include "dns/dns_service.h"
#include "dns/forward.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::string wire(const char* text) {
    return *name_from_text(text);
}

Message reply_with(uint8_t rcode, std::vector<Record> answers, std::vector<Record> authority = {}) {
    Message m;
    m.header.qr = true;
    m.header.rcode = rcode;
    m.answers = std::move(answers);
    m.authority = std::move(authority);
    return m;
}

Record a_record(const char* name, uint32_t ttl) {
    return {wire(name), type::kA, kClassIN, ttl, rdata_address(IpAddress::v4(0x01020304))};
}

}  // namespace

TEST_CASE("the cache keeps positive answers, capped at 30 seconds, aging TTLs") {
    Cache cache;
    auto t0 = Cache::Clock::now();
    Question q{wire("www.example.com"), type::kA, kClassIN};
    CHECK_FALSE(cache.lookup(q, t0).has_value());
    cache.insert(q, reply_with(0, {a_record("www.example.com", 300)}), t0);
    auto hit = cache.lookup(Question{wire("WWW.Example.COM"), type::kA, kClassIN},
                            t0 + std::chrono::seconds(10));
    REQUIRE(hit.has_value());
    CHECK(hit->answers[0].ttl == 20);
    CHECK_FALSE(cache.lookup(q, t0 + std::chrono::seconds(31)).has_value());
    CHECK(cache.hits() == 1);
    CHECK(cache.misses() == 2);
    // Another type is another entry.
    CHECK_FALSE(cache.lookup(Question{q.name, type::kAAAA, kClassIN}, t0).has_value());
}

TEST_CASE("the cache keeps negative answers for the SOA minimum, capped") {
    Cache cache;
    auto t0 = Cache::Clock::now();
    Question q{wire("nope.example.com"), type::kA, kClassIN};
    Record soa{wire("example.com"), type::kSOA, kClassIN, 3600,
               rdata_soa(wire("ns.example.com"), wire("h.example.com"), 1, 2, 3, 4, 10)};
    cache.insert(q, reply_with(3, {}, {soa}), t0);
    auto hit = cache.lookup(q, t0 + std::chrono::seconds(5));
    REQUIRE(hit.has_value());
    CHECK(hit->rcode == 3);
    CHECK(hit->authority[0].ttl == 5);
    CHECK_FALSE(cache.lookup(q, t0 + std::chrono::seconds(11)).has_value());
}

TEST_CASE("SERVFAIL, REFUSED and truncated replies are not cached") {
    Cache cache;
    auto t0 = Cache::Clock::now();
    Question q{wire("x.example.com"), type::kA, kClassIN};
    cache.insert(q, reply_with(2, {}), t0);
    cache.insert(q, reply_with(5, {}), t0);
    Message tc = reply_with(0, {a_record("x.example.com", 30)});
    tc.header.tc = true;
    cache.insert(q, tc, t0);
    CHECK(cache.size() == 0);
}

TEST_CASE("the cache is a bounded LRU") {
    Cache cache(2);
    auto t0 = Cache::Clock::now();
    Question a{wire("a.example"), type::kA, kClassIN};
    Question b{wire("b.example"), type::kA, kClassIN};
    Question c{wire("c.example"), type::kA, kClassIN};
    cache.insert(a, reply_with(0, {a_record("a.example", 30)}), t0);
    cache.insert(b, reply_with(0, {a_record("b.example", 30)}), t0);
    CHECK(cache.lookup(a, t0).has_value());  // a is now the most recent
    cache.insert(c, reply_with(0, {a_record("c.example", 30)}), t0);
    CHECK(cache.size() == 2);
    CHECK(cache.evictions() == 1);
    CHECK(cache.lookup(a, t0).has_value());
    CHECK_FALSE(cache.lookup(b, t0).has_value());
}

TEST_CASE("--dns-upstream and --dns-pods parse strictly") {
    auto upstreams = parse_upstreams("10.0.0.1, 10.0.0.2:5353,[fd00::1]:54,fd00::2");
    REQUIRE(upstreams.ok());
    REQUIRE(upstreams->size() == 4);
    CHECK((*upstreams)[0].port == 53);
    CHECK((*upstreams)[1].port == 5353);
    CHECK((*upstreams)[2].to_string() == "[fd00::1]:54");
    CHECK((*upstreams)[3].port == 53);
    CHECK_FALSE(parse_upstreams("").ok());
    CHECK_FALSE(parse_upstreams("10.0.0.1,,10.0.0.2").ok());
    auto bad = parse_upstreams("example.com");
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.error().message.find("--dns-upstream") != std::string::npos);

    CHECK(*parse_pod_records("verified") == PodRecords::kVerified);
    CHECK(*parse_pod_records("disabled") == PodRecords::kDisabled);
    CHECK(*parse_pod_records("insecure") == PodRecords::kInsecure);
    CHECK_FALSE(parse_pod_records("yes").ok());
}

TEST_CASE("nameservers are read from resolv.conf") {
    char path[] = "/tmp/sb-resolv-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    {
        std::ofstream out(path);
        out << "# comment\nsearch default.svc.cluster.local\nnameserver 10.0.0.10\n"
               "nameserver fe80::1%eth0\nnameserver 2001:db8::1\noptions ndots:5\n"
               "nameserver bogus\n";
    }
    auto servers = resolv_conf_nameservers(path);
    std::remove(path);
    REQUIRE(servers.size() == 2);
    CHECK(servers[0].to_string() == "10.0.0.10:53");
    CHECK(servers[1].address.is_v6());
    CHECK(resolv_conf_nameservers("/nonexistent/resolv.conf").empty());
}
