// The pure parts of the forwarder's defences (issue 10): which replies are
// accepted, the per-client cap, the CSPRNG's output.
#include <catch.hpp>

#include <set>

#include "dns/forward/client_forward_cap.h"
#include "dns/forward/secure_random.h"
#include "dns/forward/upstream_reply.h"

using namespace sb;
using namespace sb::dns;

namespace {

Message answer(uint16_t id, const char* name) {
    Message reply;
    reply.header.id = id;
    reply.header.qr = true;
    reply.questions.push_back({*name_from_text(name), type::kA, kClassIN});
    return reply;
}

}  // namespace

TEST_CASE("upstream reply: only QR=1 with our ID and question is accepted") {
    const std::string lower = *name_from_text("www.example.com");
    const ExpectedReply expected{0x1234, lower, type::kA, kClassIN};
    CHECK(check_upstream_reply(answer(0x1234, "WWW.Example.com"), expected) ==
          ReplyVerdict::kAccepted);
    Message query = answer(0x1234, "www.example.com");
    query.header.qr = false;
    CHECK(check_upstream_reply(query, expected) == ReplyVerdict::kNotAResponse);
    CHECK(check_upstream_reply(answer(0x1235, "www.example.com"), expected) == ReplyVerdict::kId);
    CHECK(check_upstream_reply(answer(0x1234, "evil.example.com"), expected) ==
          ReplyVerdict::kQuestion);
    Message aaaa = answer(0x1234, "www.example.com");
    aaaa.questions[0].qtype = type::kAAAA;
    CHECK(check_upstream_reply(aaaa, expected) == ReplyVerdict::kQuestion);
    Message chaos = answer(0x1234, "www.example.com");
    chaos.questions[0].qclass = 3;
    CHECK(check_upstream_reply(chaos, expected) == ReplyVerdict::kQuestion);
    Message none = answer(0x1234, "www.example.com");
    none.questions.clear();
    CHECK(check_upstream_reply(none, expected) == ReplyVerdict::kQuestion);
    Message two = answer(0x1234, "www.example.com");
    two.questions.push_back(two.questions[0]);
    CHECK(check_upstream_reply(two, expected) == ReplyVerdict::kQuestion);
}

TEST_CASE("upstream reply: bytes are parsed first; the message only when accepted") {
    const std::string lower = *name_from_text("www.example.com");
    const ExpectedReply expected{7, lower, type::kA, kClassIN};
    std::string bytes = write_message(answer(7, "www.example.com")).bytes;
    auto span = [](const std::string& b) {
        return std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(b.data()), b.size());
    };
    CheckedReply accepted = check_upstream_reply(span(bytes), expected);
    CHECK(accepted.verdict == ReplyVerdict::kAccepted);
    REQUIRE(accepted.message.has_value());
    CHECK(accepted.message->header.id == 7);
    CheckedReply cut = check_upstream_reply(span(bytes.substr(0, 15)), expected);
    CHECK(cut.verdict == ReplyVerdict::kMalformed);
    CHECK_FALSE(cut.message.has_value());
    CheckedReply other = check_upstream_reply(span(write_message(answer(8, "x")).bytes), expected);
    CHECK(other.verdict == ReplyVerdict::kId);
    CHECK_FALSE(other.message.has_value());
    CHECK(std::string(reason_label(ReplyVerdict::kNotAResponse)) == "not_a_response");
}

TEST_CASE("client forward cap: per address, released per query, 0 is no cap") {
    ClientForwardCap cap(2);
    const IpAddress a = *IpAddress::parse("10.0.0.1");
    const IpAddress b = *IpAddress::parse("fd00::1");
    CHECK(cap.acquire(a));
    CHECK(cap.acquire(a));
    CHECK_FALSE(cap.acquire(a));
    CHECK(cap.acquire(b));
    CHECK(cap.clients() == 2);
    cap.release(a);
    CHECK(cap.acquire(a));
    cap.release(a);
    cap.release(a);
    cap.release(b);
    CHECK(cap.clients() == 0);  // no entry left for a client with nothing waiting
    cap.release(b);             // more releases than acquires: ignored
    CHECK(cap.clients() == 0);
    ClientForwardCap unlimited(0);
    for (int i = 0; i < 1000; ++i) REQUIRE(unlimited.acquire(a));
}

TEST_CASE("secure random: values spread over the range, across refills") {
    SecureRandom random;
    std::set<uint16_t> ids;
    // 2000 draws of 16 bits: about 1970 distinct from a uniform source; a
    // stuck or short-cycled one gives far fewer. Spans 15 refills.
    for (int i = 0; i < 2000; ++i) ids.insert(random.next16());
    CHECK(ids.size() > 1900);
    std::set<uint64_t> wide;
    for (int i = 0; i < 100; ++i) wide.insert(random.next64());
    CHECK(wide.size() == 100);
}
