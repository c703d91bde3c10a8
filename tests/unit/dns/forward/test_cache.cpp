#include <catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "dns/dns_service.h"
#include "dns/forward/cache.h"
#include "dns/forward/forward.h"
#include "dns/search_path/resolv_conf.h"

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

using Kind = CacheLookup::Kind;
using std::chrono::seconds;

Question question_for(const char* name, uint16_t qtype = type::kA) {
    return Question{wire(name), qtype, kClassIN};
}

Record soa_record(uint32_t ttl, uint32_t minimum) {
    return {wire("example.com"), type::kSOA, kClassIN, ttl,
            rdata_soa(wire("ns.example.com"), wire("h.example.com"), 1, 2, 3, 4, minimum)};
}

Message answer_for(const char* name, uint32_t ttl) {
    return reply_with(0, {a_record(name, ttl)});
}

const Cache::Clock::time_point t0{};

}  // namespace

TEST_CASE("flags path: positive answers capped at 30 seconds, TTLs aged") {
    Cache cache;
    Question q = question_for("www.example.com");
    CHECK(cache.lookup(q, t0).kind == Kind::kMiss);
    CachedAnswer sent = cache.store(q, answer_for("www.example.com", 300), t0);
    CHECK(sent.answers[0].ttl == 30);  // the first reply is capped as the cache keeps it
    auto hit = cache.lookup(question_for("WWW.Example.COM"), t0 + seconds(10));
    REQUIRE(hit.kind == Kind::kFresh);
    CHECK(hit.answer.answers[0].ttl == 20);
    CHECK(cache.lookup(q, t0 + seconds(30)).kind == Kind::kMiss);
    CHECK(cache.hits(Cache::kSuccess) == 1);
    CHECK(cache.misses() == 2);
    CHECK(cache.requests() == 3);
    // Another type is another entry.
    CHECK(cache.lookup(question_for("www.example.com", type::kAAAA), t0).kind == Kind::kMiss);
}

TEST_CASE("flags path: denials kept for the SOA minimum, 5 s without SOA, SERVFAIL never") {
    Cache cache;
    Question q = question_for("nope.example.com");
    cache.store(q, reply_with(3, {}, {soa_record(3600, 10)}), t0);
    auto hit = cache.lookup(q, t0 + seconds(5));
    REQUIRE(hit.kind == Kind::kFresh);
    CHECK(hit.answer.rcode == 3);
    CHECK(hit.answer.authority[0].ttl == 5);
    CHECK(cache.hits(Cache::kDenial) == 1);
    CHECK(cache.lookup(q, t0 + seconds(10)).kind == Kind::kMiss);

    Question bare = question_for("bare.example.com");
    cache.store(bare, reply_with(3, {}), t0);
    CHECK(cache.lookup(bare, t0 + seconds(4)).kind == Kind::kFresh);
    CHECK(cache.lookup(bare, t0 + seconds(5)).kind == Kind::kMiss);

    Question failing = question_for("x.example.com");
    cache.store(failing, reply_with(2, {}), t0);
    cache.store(failing, reply_with(5, {}), t0);
    Message tc = answer_for("x.example.com", 30);
    tc.header.tc = true;
    cache.store(failing, tc, t0);
    CHECK(cache.size(Cache::kSuccess) + cache.size(Cache::kDenial) == 0);
}

TEST_CASE("flags path: each store is a bounded LRU") {
    CacheSettings settings;
    settings.success.capacity = 4;
    Cache cache(settings);
    const char* names[] = {"a.example", "b.example", "c.example", "d.example", "e.example"};
    for (int i = 0; i < 4; ++i) cache.store(question_for(names[i]), answer_for(names[i], 30), t0);
    CHECK(cache.lookup(question_for("a.example"), t0).kind == Kind::kFresh);  // now the newest
    cache.store(question_for("e.example"), answer_for("e.example", 30), t0);
    CHECK(cache.size(Cache::kSuccess) == 4);
    CHECK(cache.evictions(Cache::kSuccess) == 1);
    CHECK(cache.evictions(Cache::kDenial) == 0);
    CHECK(cache.lookup(question_for("a.example"), t0).kind == Kind::kFresh);
    CHECK(cache.lookup(question_for("b.example"), t0).kind == Kind::kMiss);
}

TEST_CASE("CoreDNS defaults: 5 s minimum, 3600 s / 1800 s maximum, SERVFAIL 5 s") {
    Cache cache(CacheSettings::coredns_default());
    Question shortlived = question_for("short.example.com");
    CachedAnswer sent = cache.store(shortlived, answer_for("short.example.com", 1), t0);
    CHECK(sent.answers[0].ttl == 5);
    CHECK(cache.lookup(shortlived, t0 + seconds(4)).kind == Kind::kFresh);
    CHECK(cache.lookup(shortlived, t0 + seconds(5)).kind == Kind::kMiss);

    Question longlived = question_for("long.example.com");
    cache.store(longlived, answer_for("long.example.com", 86400), t0);
    CHECK(cache.lookup(longlived, t0 + seconds(3599)).kind == Kind::kFresh);
    CHECK(cache.lookup(longlived, t0 + seconds(3600)).kind == Kind::kMiss);

    Question denied = question_for("nope.example.com");
    cache.store(denied, reply_with(3, {}, {soa_record(86400, 86400)}), t0);
    CHECK(cache.lookup(denied, t0 + seconds(1799)).kind == Kind::kFresh);
    CHECK(cache.lookup(denied, t0 + seconds(1800)).kind == Kind::kMiss);

    // An NXDOMAIN without SOA is not kept; an empty NOERROR is a success.
    Question bare = question_for("bare.example.com");
    cache.store(bare, reply_with(3, {}), t0);
    CHECK(cache.lookup(bare, t0).kind == Kind::kMiss);
    cache.store(bare, reply_with(0, {}), t0);
    CHECK(cache.lookup(bare, t0 + seconds(4)).kind == Kind::kFresh);
    CHECK(cache.hits(Cache::kSuccess) == 3);
    CHECK(cache.size(Cache::kDenial) == 0);

    Question failing = question_for("fail.example.com");
    cache.store(failing, reply_with(2, {}), t0);
    auto servfail = cache.lookup(failing, t0 + seconds(4));
    REQUIRE(servfail.kind == Kind::kFresh);
    CHECK(servfail.answer.rcode == 2);
    CHECK(cache.hits(Cache::kDenial) == 2);  // the NXDOMAIN of 1799 s and this
    CHECK(cache.lookup(failing, t0 + seconds(5)).kind == Kind::kMiss);
}

TEST_CASE("a CNAME chain that does not reach the queried type is not kept without SOA") {
    Cache cache(CacheSettings::coredns_default());
    Question q = question_for("alias.example.com");
    Record cname{wire("alias.example.com"), type::kCNAME, kClassIN, 60, wire("target.example.net")};
    cache.store(q, reply_with(0, {cname}), t0);
    CHECK(cache.lookup(q, t0).kind == Kind::kMiss);
    cache.store(q, reply_with(0, {cname, a_record("target.example.net", 60)}), t0);
    CHECK(cache.lookup(q, t0).kind == Kind::kFresh);
    // With an SOA it is NODATA: a denial.
    Question aaaa = question_for("alias.example.com", type::kAAAA);
    cache.store(aaaa, reply_with(0, {cname}, {soa_record(60, 60)}), t0);
    CHECK(cache.size(Cache::kDenial) == 1);
}

TEST_CASE("success and denial: their own TTL bounds and minimums") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.success = {9984, 100, 20, std::nullopt};
    settings.denial = {9984, 8, 2, std::nullopt};
    Cache cache(settings);
    Question up = question_for("up.example.com");
    cache.store(up, answer_for("up.example.com", 1000), t0);
    CHECK(cache.lookup(up, t0 + seconds(99)).kind == Kind::kFresh);
    CHECK(cache.lookup(up, t0 + seconds(100)).kind == Kind::kMiss);
    Question brief = question_for("brief.example.com");
    cache.store(brief, answer_for("brief.example.com", 3), t0);
    CHECK(cache.lookup(brief, t0 + seconds(19)).answer.answers[0].ttl == 1);
    Question down = question_for("down.example.com");
    cache.store(down, reply_with(3, {}, {soa_record(600, 600)}), t0);
    CHECK(cache.lookup(down, t0 + seconds(7)).kind == Kind::kFresh);
    CHECK(cache.lookup(down, t0 + seconds(8)).kind == Kind::kMiss);
    Question blip = question_for("blip.example.com");
    cache.store(blip, reply_with(3, {}, {soa_record(0, 0)}), t0);
    CHECK(cache.lookup(blip, t0 + seconds(1)).kind == Kind::kFresh);
    CHECK(cache.lookup(blip, t0 + seconds(2)).kind == Kind::kMiss);
}

TEST_CASE("capacity: 256 shards of at least 4 entries, random eviction when a shard is full") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.success.capacity = 1024;  // 4 per shard
    settings.denial.capacity = 0;      // CoreDNS's floor: still 4 per shard
    Cache cache(settings);
    const int names = 3000;
    for (int i = 0; i < names; ++i) {
        std::string name = "n" + std::to_string(i) + ".example.com";
        cache.store(question_for(name.c_str()), answer_for(name.c_str(), 60), t0);
    }
    size_t kept = cache.size(Cache::kSuccess);
    CHECK(kept <= 1024);
    CHECK(kept > 900);  // 3000 names fill nearly every shard
    CHECK(cache.evictions(Cache::kSuccess) == names - kept);
    for (int i = 0; i < 2000; ++i) {
        std::string name = "d" + std::to_string(i) + ".example.com";
        cache.store(question_for(name.c_str()), reply_with(3, {}, {soa_record(60, 60)}), t0);
    }
    CHECK(cache.size(Cache::kDenial) <= 1024);
    CHECK(cache.evictions(Cache::kDenial) == 2000 - cache.size(Cache::kDenial));
    // Eviction is random, not LRU: of the first 8 names some survive, some not.
    int survivors = 0;
    for (int i = 0; i < names; ++i) {
        std::string name = "n" + std::to_string(i) + ".example.com";
        survivors += cache.lookup(question_for(name.c_str()), t0).kind == Kind::kFresh;
    }
    CHECK(static_cast<size_t>(survivors) == kept);
}

TEST_CASE("serve_stale immediate: stale at TTL 0, one background refresh at a time") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.serve_stale = seconds(60);
    Cache cache(settings);
    Question q = question_for("www.example.com");
    cache.store(q, answer_for("www.example.com", 10), t0);
    auto stale = cache.lookup(q, t0 + seconds(15));
    REQUIRE(stale.kind == Kind::kStale);
    CHECK(stale.answer.answers[0].ttl == 0);
    CHECK(stale.refresh);
    CHECK_FALSE(stale.verify);
    // A refresh is under way: the next query gets stale data without one.
    CHECK_FALSE(cache.lookup(q, t0 + seconds(16)).refresh);
    CHECK(cache.served_stale() == 2);
    CHECK(cache.refreshes() == 1);
    // A failed refresh keeps the stale entry; the next query refreshes again.
    cache.refreshed(q, make_error(ErrorCode::kUnavailable, "timeout"), t0 + seconds(17));
    CHECK(cache.lookup(q, t0 + seconds(18)).refresh);
    cache.refreshed(q, reply_with(2, {}), t0 + seconds(19));  // SERVFAIL does not refresh
    auto again = cache.lookup(q, t0 + seconds(20));
    CHECK(again.kind == Kind::kStale);
    CHECK(again.refresh);
    cache.refreshed(q, answer_for("www.example.com", 10), t0 + seconds(20));
    auto fresh = cache.lookup(q, t0 + seconds(21));
    CHECK(fresh.kind == Kind::kFresh);
    CHECK(fresh.answer.answers[0].ttl == 9);
    // Beyond DURATION past expiry: a miss, the entry dropped.
    CHECK(cache.lookup(q, t0 + seconds(20 + 10 + 60)).kind == Kind::kMiss);
    CHECK(cache.size(Cache::kSuccess) == 0);
}

TEST_CASE("serve_stale verify: upstream first, the stale answer only when it fails") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.serve_stale = seconds(60);
    settings.verify_stale = true;
    Cache cache(settings);
    Question q = question_for("www.example.com");
    cache.store(q, answer_for("www.example.com", 10), t0);
    auto stale = cache.lookup(q, t0 + seconds(15));
    REQUIRE(stale.kind == Kind::kStale);
    CHECK(stale.verify);
    CHECK_FALSE(stale.refresh);
    CHECK(cache.served_stale() == 0);  // not yet: the upstream may answer
    auto failed = cache.complete(q, make_error(ErrorCode::kUnavailable, "timeout"), stale.answer,
                                 t0 + seconds(16));
    REQUIRE(failed.ok());
    CHECK(failed->answers[0].ttl == 0);
    CHECK(cache.served_stale() == 1);
    auto servfail = cache.complete(q, reply_with(2, {}), stale.answer, t0 + seconds(16));
    REQUIRE(servfail.ok());
    CHECK(servfail->rcode == 0);
    CHECK(cache.served_stale() == 2);
    Message renewed = reply_with(0, {a_record("www.example.com", 10)});
    renewed.answers[0].rdata = rdata_address(IpAddress::v4(0x05060708));
    auto fresh = cache.complete(q, renewed, stale.answer, t0 + seconds(17));
    REQUIRE(fresh.ok());
    CHECK(fresh->answers[0].rdata == renewed.answers[0].rdata);
    CHECK(cache.served_stale() == 2);
    CHECK(cache.lookup(q, t0 + seconds(18)).kind == Kind::kFresh);
}

TEST_CASE("disable success|denial ZONES: those names skip that store only") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.disable_success = {wire("sub.example.com")};
    settings.disable_denial = {std::string(1, '\0')};  // every zone
    Cache cache(settings);
    cache.store(question_for("a.sub.example.com"), answer_for("a.sub.example.com", 60), t0);
    cache.store(question_for("other.example.com"), answer_for("other.example.com", 60), t0);
    cache.store(question_for("nope.example.com"), reply_with(3, {}, {soa_record(60, 60)}), t0);
    cache.store(question_for("fail.example.com"), reply_with(2, {}), t0);
    CHECK(cache.lookup(question_for("a.sub.example.com"), t0).kind == Kind::kMiss);
    CHECK(cache.lookup(question_for("other.example.com"), t0).kind == Kind::kFresh);
    CHECK(cache.size(Cache::kDenial) == 0);
}

TEST_CASE("an answer of the other store replaces the old one") {
    Cache cache(CacheSettings::coredns_default());
    Question q = question_for("flip.example.com");
    cache.store(q, reply_with(3, {}, {soa_record(60, 60)}), t0);
    cache.store(q, answer_for("flip.example.com", 60), t0);
    CHECK(cache.size(Cache::kDenial) == 0);
    CHECK(cache.lookup(q, t0).answer.rcode == 0);
}

TEST_CASE("the cache's metrics carry CoreDNS's names and labels") {
    CacheSettings settings = CacheSettings::coredns_default();
    settings.zones_label = "example.org.,example.net.";
    Cache cache(settings);
    Question q = question_for("www.example.org");
    cache.lookup(q, t0);
    cache.store(q, answer_for("www.example.org", 60), t0);
    cache.lookup(q, t0);
    metrics::TextWriter out;
    cache.append_metrics(out, "dns://:53");
    std::string text = out.text();
    const std::string labels = "server=\"dns://:53\",zones=\"example.org.,example.net.\",view=\"\"";
    auto typed = [](const char* type) {
        return std::string("server=\"dns://:53\",type=\"") + type +
               "\",zones=\"example.org.,example.net.\",view=\"\"";
    };
    CHECK(text.find("coredns_cache_entries{" + typed("success") + "} 1\n") != std::string::npos);
    CHECK(text.find("coredns_cache_entries{" + typed("denial") + "} 0\n") != std::string::npos);
    CHECK(text.find("coredns_cache_hits_total{" + typed("success") + "} 1\n") != std::string::npos);
    CHECK(text.find("coredns_cache_misses_total{" + labels + "} 1\n") != std::string::npos);
    CHECK(text.find("coredns_cache_requests_total{" + labels + "} 2\n") != std::string::npos);
    CHECK(text.find("coredns_cache_served_stale_total{" + labels + "} 0\n") != std::string::npos);
    CHECK(text.find("coredns_cache_prefetch_total{" + labels + "} 0\n") != std::string::npos);
    CHECK(text.find("coredns_cache_evictions_total{" + typed("denial") + "} 0\n") !=
          std::string::npos);
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
    // It names the entry; the option table names the flag (test_flags.cpp).
    CHECK(bad.error().message.find("\"example.com\"") != std::string::npos);
    CHECK(bad.error().message.find("--dns-upstream") == std::string::npos);

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
