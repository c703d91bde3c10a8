// Response-rate limiting (--dns-rrl): the token bucket per flow with an
// injected clock, the slip, the flow's prefix and class, the fixed table.
#include <catch.hpp>

#include "base/socket_address.h"
#include "dns/serve/rrl.h"
#include "dns/wire/wire.h"

using namespace sb;
using namespace sb::dns;

namespace {

using Verdict = ResponseRateLimiter::Verdict;
using Class = ResponseRateLimiter::Class;
using std::chrono::milliseconds;
const ResponseRateLimiter::Clock::time_point t0{std::chrono::seconds(1000)};

sockaddr_storage client(const char* address) {
    auto parsed = IpAddress::parse(address);
    REQUIRE(parsed);
    SocketAddress socket = to_socket_address(HostPort{*parsed, 5353});
    return socket.storage();
}

std::string reply(const char* name, uint8_t rcode = 0, size_t answers = 1,
                  uint16_t qtype = type::kA) {
    Message m;
    m.header.id = 7;
    m.header.qr = true;
    m.header.rcode = rcode;
    m.questions.push_back(Question{*name_from_text(name), qtype, kClassIN});
    for (size_t i = 0; i < answers; ++i) {
        m.answers.push_back({*name_from_text(name), type::kA, kClassIN, 30,
                             rdata_address(IpAddress::v4(0x0a000001 + static_cast<uint32_t>(i)))});
    }
    return write_message(m).bytes;
}

RrlSettings limits(uint32_t rate, uint32_t slip, size_t table_size) {
    RrlSettings settings;
    settings.rate = rate;
    settings.slip = slip;
    settings.table_size = table_size;
    return settings;
}

// Verdicts of `n` replies of `name` to `from`, all at `at`.
std::vector<Verdict> burst(ResponseRateLimiter& rrl, const char* from, const char* name, int n,
                           ResponseRateLimiter::Clock::time_point at) {
    std::vector<Verdict> verdicts;
    sockaddr_storage address = client(from);
    for (int i = 0; i < n; ++i) {
        std::string bytes = reply(name);
        verdicts.push_back(rrl.admit(address, bytes, at));
    }
    return verdicts;
}

size_t count(const std::vector<Verdict>& verdicts, Verdict verdict) {
    return static_cast<size_t>(std::count(verdicts.begin(), verdicts.end(), verdict));
}

}  // namespace

TEST_CASE("a flow gets RATE replies at once, then RATE a second") {
    ResponseRateLimiter rrl(limits(5, 0, 1021));
    auto first = burst(rrl, "10.0.0.1", "a.example", 20, t0);
    CHECK(count(first, Verdict::kSend) == 5);
    CHECK(count(first, Verdict::kDrop) == 15);
    // 200 ms later: one token more.
    CHECK(count(burst(rrl, "10.0.0.1", "a.example", 3, t0 + milliseconds(200)), Verdict::kSend) ==
          1);
    // A long pause refills to RATE, never beyond.
    CHECK(count(burst(rrl, "10.0.0.1", "a.example", 20, t0 + std::chrono::seconds(60)),
                Verdict::kSend) == 5);
    CHECK(rrl.dropped() == 15 + 2 + 15);
    CHECK(rrl.slipped() == 0);
}

TEST_CASE("slip N: every Nth limited reply goes out truncated, the others are dropped") {
    ResponseRateLimiter rrl(limits(2, 3, 1021));
    auto verdicts = burst(rrl, "10.0.0.1", "a.example", 2 + 9, t0);
    CHECK(count(verdicts, Verdict::kSend) == 2);
    CHECK(count(verdicts, Verdict::kSlip) == 3);
    CHECK(count(verdicts, Verdict::kDrop) == 6);
    CHECK(verdicts[2 + 2] == Verdict::kSlip);
    CHECK(rrl.slipped() == 3);

    ResponseRateLimiter every(limits(1, 1, 1021));
    CHECK(count(burst(every, "10.0.0.1", "a.example", 5, t0), Verdict::kSlip) == 4);
}

TEST_CASE("a slipped reply is the header and question with TC set") {
    ResponseRateLimiter rrl(limits(1, 1, 1021));
    sockaddr_storage from = client("10.0.0.1");
    std::string first = reply("a.example", 0, 3);
    REQUIRE(rrl.admit(from, first, t0) == Verdict::kSend);
    CHECK(first == reply("a.example", 0, 3));  // sent as it was
    std::string second = reply("a.example", 0, 3);
    REQUIRE(rrl.admit(from, second, t0) == Verdict::kSlip);
    auto parsed = parse_message(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(second.data()), second.size()));
    REQUIRE(parsed);
    CHECK(parsed->header.tc);
    CHECK(parsed->header.id == 7);
    CHECK(parsed->answers.empty());
    REQUIRE(parsed->questions.size() == 1);
    CHECK(parsed->questions[0].name == *name_from_text("a.example"));
}

TEST_CASE("flows: a /24 or /56 prefix, the reply's class and its name") {
    ResponseRateLimiter rrl(limits(1, 0, 100003));
    CHECK(burst(rrl, "10.0.0.1", "a.example", 1, t0)[0] == Verdict::kSend);
    CHECK(burst(rrl, "10.0.0.200", "a.example", 1, t0)[0] == Verdict::kDrop);  // same /24
    CHECK(burst(rrl, "10.0.1.1", "a.example", 1, t0)[0] == Verdict::kSend);
    CHECK(burst(rrl, "10.0.0.1", "A.Example", 1, t0)[0] == Verdict::kDrop);  // names fold case
    CHECK(burst(rrl, "10.0.0.1", "b.example", 1, t0)[0] == Verdict::kSend);
    CHECK(burst(rrl, "fd00:0:0:ff::1", "a.example", 1, t0)[0] == Verdict::kSend);
    CHECK(burst(rrl, "fd00:0:0:ff:1::2", "a.example", 1, t0)[0] == Verdict::kDrop);  // same /56
    CHECK(burst(rrl, "fd00:0:0:100::1", "a.example", 1, t0)[0] == Verdict::kSend);

    // NXDOMAIN and errors: one flow per client prefix, whatever the name.
    sockaddr_storage from = client("10.9.9.9");
    std::string nx1 = reply("x1.example", 3, 0);
    std::string nx2 = reply("x2.example", 3, 0);
    std::string empty = reply("x3.example", 0, 0);
    CHECK(rrl.admit(from, nx1, t0) == Verdict::kSend);
    CHECK(rrl.admit(from, nx2, t0) == Verdict::kDrop);
    CHECK(rrl.admit(from, empty, t0) == Verdict::kSend);  // NODATA is its own class
}

TEST_CASE("classes follow Knot's: normal, empty, large, any, nxdomain, error") {
    CHECK(ResponseRateLimiter::classify(reply("a.example")) == Class::kNormal);
    CHECK(ResponseRateLimiter::classify(reply("a.example", 0, 0)) == Class::kEmpty);
    CHECK(ResponseRateLimiter::classify(reply("a.example", 0, 80)) == Class::kLarge);
    CHECK(ResponseRateLimiter::classify(reply("a.example", 0, 1, type::kANY)) == Class::kAny);
    CHECK(ResponseRateLimiter::classify(reply("a.example", 3, 0)) == Class::kNxdomain);
    CHECK(ResponseRateLimiter::classify(reply("a.example", 2, 0)) == Class::kError);
    CHECK(ResponseRateLimiter::classify(std::string(5, '\0')) == Class::kError);
}

TEST_CASE("a tiny table: flows share a busy bucket (limited together), take over an idle one") {
    ResponseRateLimiter rrl(limits(2, 0, 1));
    CHECK(count(burst(rrl, "10.0.0.1", "a.example", 2, t0), Verdict::kSend) == 2);
    // Another flow, same bucket, while the first is still limited: shared.
    CHECK(burst(rrl, "10.0.1.1", "b.example", 1, t0)[0] == Verdict::kDrop);
    // Once the bucket is full again, it is the new flow's.
    auto later = t0 + std::chrono::seconds(2);
    CHECK(count(burst(rrl, "10.0.1.1", "b.example", 3, later), Verdict::kSend) == 2);
}

TEST_CASE("a reply without a plain question is never slipped, only dropped") {
    ResponseRateLimiter rrl(limits(1, 1, 1021));
    sockaddr_storage from = client("10.0.0.1");
    std::string runt(12, '\0');
    runt[3] = 1;  // FORMERR, no question
    CHECK(rrl.admit(from, runt, t0) == Verdict::kSend);
    std::string again = runt;
    CHECK(rrl.admit(from, again, t0) == Verdict::kDrop);
    CHECK(again == runt);
    std::string cut = runt;
    CHECK_FALSE(truncate_to_question(cut));
}

TEST_CASE("whitelisted clients are never limited, the others are") {
    RrlSettings settings = limits(1, 0, 1021);
    settings.whitelist = {*Prefix::parse("10.1.0.0/16"), *Prefix::parse("fd00:1::/32")};
    ResponseRateLimiter rrl(settings);
    CHECK(count(burst(rrl, "10.1.2.3", "a.example", 50, t0), Verdict::kSend) == 50);
    CHECK(count(burst(rrl, "fd00:1::5", "a.example", 50, t0), Verdict::kSend) == 50);
    CHECK(count(burst(rrl, "10.2.2.3", "a.example", 50, t0), Verdict::kSend) == 1);
    CHECK(rrl.dropped() == 49);
}

TEST_CASE("the limiter's counters are exported") {
    ResponseRateLimiter rrl(limits(1, 2, 1021));
    burst(rrl, "10.0.0.1", "a.example", 5, t0);  // 1 sent, 2 slipped, 2 dropped
    metrics::TextWriter out;
    rrl.append_metrics(out);
    std::string text = out.text();
    CHECK(text.find("switchboard_dns_rrl_slipped_total 2\n") != std::string::npos);
    CHECK(text.find("switchboard_dns_rrl_dropped_total 2\n") != std::string::npos);
}
