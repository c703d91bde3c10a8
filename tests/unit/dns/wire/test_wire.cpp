#include <catch.hpp>

#include "dns/wire/wire.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::span<const uint8_t> span_of(const std::string& bytes) {
    return {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()};
}

std::string wire(const char* text) {
    return *name_from_text(text);
}

// A 12-byte header with the given counts.
std::string header(uint16_t qd, uint16_t an = 0, uint16_t ns = 0, uint16_t ar = 0) {
    std::string h = {'\x12', '\x34', '\x01', '\x00'};
    for (uint16_t count : {qd, an, ns, ar}) {
        h.push_back(static_cast<char>(count >> 8));
        h.push_back(static_cast<char>(count & 0xff));
    }
    return h;
}

Message sample() {
    Message m;
    m.header.id = 0xbeef;
    m.header.qr = true;
    m.header.aa = true;
    m.header.rd = true;
    m.questions.push_back({wire("web.default.svc.cluster.local"), type::kA, kClassIN});
    m.answers.push_back({wire("web.default.svc.cluster.local"), type::kA, kClassIN, 30,
                         rdata_address(*IpAddress::parse("10.96.0.10"))});
    m.answers.push_back({wire("web.default.svc.cluster.local"), type::kCNAME, kClassIN, 30,
                         wire("other.default.svc.cluster.local")});
    m.authority.push_back({wire("cluster.local"), type::kSOA, kClassIN, 30,
                           rdata_soa(wire("ns.dns.cluster.local"), wire("hostmaster.cluster.local"),
                                     7, 7200, 1800, 86400, 30)});
    m.additional.push_back({wire("x.default.svc.cluster.local"), type::kSRV, kClassIN, 30,
                            rdata_srv(0, 100, 80, wire("web.default.svc.cluster.local"))});
    m.edns = Edns{};
    m.edns->dnssec_ok = true;
    return m;
}

}  // namespace

TEST_CASE("names convert between text and wire form") {
    CHECK(wire("a.bc") == std::string("\1a\2bc\0", 6));
    CHECK(wire("a.bc.") == wire("a.bc"));
    CHECK(wire(".") == std::string(1, '\0'));
    CHECK(name_to_text(wire("Web.Default")) == "Web.Default.");
    CHECK(name_lower(wire("Web.DEFAULT")) == wire("web.default"));
    CHECK(name_is_under(wire("a.b.cluster.local"), wire("cluster.local")));
    CHECK(name_is_under(wire("cluster.local"), wire("cluster.local")));
    CHECK_FALSE(name_is_under(wire("xcluster.local"), wire("cluster.local")));
    CHECK_FALSE(name_is_under(wire("local"), wire("cluster.local")));
    CHECK(name_label_count(wire("a.b.c")) == 3);
    CHECK(name_parent(wire("a.b.c")) == wire("b.c"));
    CHECK(name_first_label(wire("abc.d")) == "abc");
}

TEST_CASE("names with bad labels are rejected") {
    CHECK_FALSE(name_from_text("a..b").ok());
    CHECK_FALSE(name_from_text(std::string(64, 'a') + ".b").ok());
    CHECK(name_from_text(std::string(63, 'a') + ".b").ok());
    std::string long_name;
    for (int i = 0; i < 5; ++i) long_name += std::string(60, 'a') + ".";
    CHECK_FALSE(name_from_text(long_name).ok());  // 305 bytes
}

TEST_CASE("a message survives a write and a parse unchanged") {
    Message m = sample();
    WriteResult written = write_message(m);
    CHECK_FALSE(written.truncated);
    auto parsed = parse_message(span_of(written.bytes));
    REQUIRE(parsed.ok());
    CHECK(parsed->header.id == 0xbeef);
    CHECK(parsed->header.qr);
    CHECK(parsed->header.aa);
    CHECK(parsed->header.rd);
    CHECK(parsed->questions == m.questions);
    CHECK(parsed->answers == m.answers);
    CHECK(parsed->authority == m.authority);
    CHECK(parsed->additional == m.additional);
    REQUIRE(parsed->edns.has_value());
    CHECK(parsed->edns->dnssec_ok);
    CHECK(parsed->edns->udp_size == kEdnsUdpSize);
}

TEST_CASE("names are compressed on output") {
    Message m = sample();
    std::string bytes = write_message(m).bytes;
    // The answer owners point back at the question name (offset 12).
    std::string pointer = {'\xc0', '\x0c'};
    size_t question_end = kHeaderSize + wire("web.default.svc.cluster.local").size() + 4;
    CHECK(bytes.compare(question_end, 2, pointer) == 0);
    // "cluster.local" appears in full twice only: in the question and in
    // the SRV target; every other name (CNAME and SOA rdata too) points.
    std::string label = "\7cluster\5local";
    size_t count = 0;
    for (size_t at = bytes.find(label); at != std::string::npos; at = bytes.find(label, at + 1)) {
        ++count;
    }
    CHECK(count == 2);
    // SRV targets are never compressed (RFC 2782): the full name is there.
    CHECK(bytes.find(wire("web.default.svc.cluster.local"), question_end) != std::string::npos);
}

TEST_CASE("compression pointers are followed backwards only") {
    // Question "a.b" at 12, then a question whose name is "c" + pointer to 14 ("b").
    std::string packet = header(2);
    packet += std::string("\1a\1b\0", 5) + std::string("\0\1\0\1", 4);
    packet += std::string("\1c\xc0\x0e", 4) + std::string("\0\1\0\1", 4);
    auto parsed = parse_message(span_of(packet));
    REQUIRE(parsed.ok());
    CHECK(parsed->questions[1].name == wire("c.b"));

    SECTION("a pointer to itself is a loop") {
        std::string bad = header(1) + std::string("\xc0\x0c", 2) + std::string("\0\1\0\1", 4);
        CHECK_FALSE(parse_message(span_of(bad)).ok());
    }
    SECTION("a pointer forwards is rejected") {
        std::string bad = header(1) + std::string("\xc0\x12", 2) + std::string("\0\1\0\1", 4) +
                          std::string("\1a\0", 3);
        CHECK_FALSE(parse_message(span_of(bad)).ok());
    }
    SECTION("two pointers forming a loop are rejected") {
        // name at 12: label "a" then pointer to 16; at 16: pointer to 12.
        std::string bad =
            header(1) + std::string("\1a\xc0\x10\xc0\x0c", 6) + std::string("\0\1\0\1", 4);
        CHECK_FALSE(parse_message(span_of(bad)).ok());
    }
    SECTION("a pointer back into the middle of its own name loops") {
        // "\1a\1b" then a pointer to offset 14 (the "\1b" label) from offset 16.
        std::string bad = header(1) + std::string("\1a\1b\xc0\x0e", 6) + std::string("\0\1\0\1", 4);
        CHECK_FALSE(parse_message(span_of(bad)).ok());
    }
}

TEST_CASE("truncated packets are rejected at every length") {
    std::string bytes = write_message(sample()).bytes;
    for (size_t length = 0; length < bytes.size(); ++length) {
        INFO("length " << length);
        CHECK_FALSE(parse_message(span_of(bytes.substr(0, length))).ok());
    }
}

TEST_CASE("trailing garbage is rejected") {
    std::string bytes = write_message(sample()).bytes + "x";
    auto parsed = parse_message(span_of(bytes));
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error().message.find("trailing") != std::string::npos);
}

TEST_CASE("counts larger than the packet are rejected without allocating") {
    std::string bad = header(0xffff, 0xffff, 0xffff, 0xffff);
    CHECK_FALSE(parse_message(span_of(bad)).ok());
}

TEST_CASE("a label over 63 bytes and a name over 255 bytes do not parse") {
    std::string bad = header(1) + "\x40" + std::string(64, 'a') + std::string("\0\0\1\0\1", 5);
    CHECK_FALSE(parse_message(span_of(bad)).ok());
    std::string long_name;
    for (int i = 0; i < 5; ++i) long_name += "\x3c" + std::string(60, 'a');
    std::string too_long = header(1) + long_name + std::string("\0\0\1\0\1", 5);
    CHECK_FALSE(parse_message(span_of(too_long)).ok());
}

TEST_CASE("OPT is accepted once, in the additional section, owned by the root") {
    Message m;
    m.questions.push_back({wire("a"), type::kA, kClassIN});
    m.edns = Edns{};
    m.edns->udp_size = 4096;
    std::string bytes = write_message(m).bytes;
    auto parsed = parse_message(span_of(bytes));
    REQUIRE(parsed.ok());
    CHECK(parsed->edns->udp_size == 4096);
    CHECK(parsed->additional.empty());

    std::string opt = std::string("\0\0\x29\x10\0\0\0\0\0\0\0", 11);
    std::string twice = header(0, 0, 0, 2) + opt + opt;
    CHECK_FALSE(parse_message(span_of(twice)).ok());
    std::string in_answer = header(0, 1, 0, 0) + opt;
    CHECK_FALSE(parse_message(span_of(in_answer)).ok());
    std::string not_root = header(0, 0, 0, 1) + std::string("\1a\0\0\x29\x10\0\0\0\0\0\0\0", 13);
    CHECK_FALSE(parse_message(span_of(not_root)).ok());
}

TEST_CASE("rdata with compressed names is expanded on parse") {
    // An MX record whose exchange is a pointer to the question name.
    std::string packet = header(1, 1);
    packet += std::string("\1a\1b\0", 5) + std::string("\0\x0f\0\1", 4);
    packet += std::string("\xc0\x0c\0\x0f\0\1\0\0\0\x3c\0\4\0\x0a\xc0\x0c", 16);
    auto parsed = parse_message(span_of(packet));
    REQUIRE(parsed.ok());
    CHECK(parsed->answers[0].rdata == std::string("\0\x0a", 2) + wire("a.b"));
    // An rdata length that disagrees with its names is an error.
    std::string bad = packet;
    bad[kHeaderSize + 9 + 9] = '\5';
    bad += "x";
    CHECK_FALSE(parse_message(span_of(bad)).ok());
}

TEST_CASE("a reply that does not fit is truncated with TC") {
    Message m;
    m.header.qr = true;
    m.questions.push_back({wire("many.default.svc.cluster.local"), type::kA, kClassIN});
    for (int i = 0; i < 100; ++i) {
        m.answers.push_back({m.questions[0].name, type::kA, kClassIN, 30,
                             rdata_address(IpAddress::v4(0x0a000000u + static_cast<uint32_t>(i)))});
    }
    m.edns = Edns{};
    WriteResult written = write_message(m, 512);
    CHECK(written.truncated);
    CHECK(written.bytes.size() <= 512);
    auto parsed = parse_message(span_of(written.bytes));
    REQUIRE(parsed.ok());
    CHECK(parsed->header.tc);
    CHECK(parsed->answers.empty());
    CHECK(parsed->questions.size() == 1);
    CHECK(parsed->edns.has_value());

    WriteResult full = write_message(m, 65535);
    CHECK_FALSE(full.truncated);
    CHECK(full.shuffle_count == 100);
    CHECK(full.shuffle_size == 16);  // pointer + type/class/ttl/length + 4 bytes
}

TEST_CASE("the additional section is dropped before TC is set") {
    Message m = sample();
    m.edns.reset();
    for (int i = 0; i < 40; ++i) m.additional.push_back(m.additional.front());
    size_t without =
        write_message(Message{m.header, m.questions, m.answers, m.authority, {}, {}}).bytes.size();
    WriteResult written = write_message(m, without);
    CHECK_FALSE(written.truncated);
    auto parsed = parse_message(span_of(written.bytes));
    REQUIRE(parsed.ok());
    CHECK(parsed->additional.empty());
    CHECK(parsed->answers.size() == 2);
}

TEST_CASE("peek_header salvages the ID of an unparsable query") {
    std::string packet = header(1) + "\5ab";
    auto peek = peek_header(span_of(packet));
    CHECK(peek.has_header);
    CHECK(peek.header.id == 0x1234);
    CHECK(peek.header.rd);
    CHECK_FALSE(peek_header(span_of(std::string(5, '\0'))).has_header);
}
