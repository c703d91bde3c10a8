// The `log` and `errors` lines as CoreDNS writes them: the common format,
// every placeholder, the replacer's literal rules, response classes and the
// choice of block and rule.
#include <catch.hpp>

#include "dns/corefile/options.h"
#include "dns/serve/query_log.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::string packet(const Message& m) {
    return write_message(m).bytes;
}

std::span<const uint8_t> bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Message query_for(const char* name, uint16_t qtype, uint16_t id = 3530) {
    Message q;
    q.header.id = id;
    q.header.rd = true;
    q.questions.push_back({*name_from_text(name), qtype, kClassIN});
    return q;
}

Message reply_to(const Message& query, Rcode rcode) {
    Message r;
    r.header = query.header;
    r.header.qr = true;
    r.header.aa = true;
    r.header.rcode = static_cast<uint8_t>(rcode);
    r.questions = query.questions;
    return r;
}

Record a_record(const char* name) {
    return Record{*name_from_text(name), type::kA, kClassIN, 5,
                  rdata_address(*IpAddress::parse("10.96.0.1"))};
}

Record soa_record() {
    return Record{*name_from_text("cluster.local"), type::kSOA, kClassIN, 5,
                  rdata_soa(*name_from_text("ns.dns.cluster.local"),
                            *name_from_text("hostmaster.cluster.local"), 1, 7200, 1800, 86400, 5)};
}

DescribedQuery describe(const Message& query, const Message& reply, bool tcp = false,
                        const char* remote = "10.244.0.1") {
    auto q = packet(query);
    auto r = packet(reply);
    auto d = describe_exchange(bytes(q), bytes(r), tcp, HostPort{*IpAddress::parse(remote), 51246},
                               std::nullopt, 0.000123);
    REQUIRE(d);
    return *d;
}

}  // namespace

TEST_CASE("query log: CoreDNS's common log format line") {
    Message q = query_for("Kubernetes.Default.svc.cluster.local", type::kA);
    Message r = reply_to(q, Rcode::kNoError);
    r.answers.push_back(a_record("kubernetes.default.svc.cluster.local"));
    DescribedQuery d = describe(q, r);
    const auto qsize = packet(q).size();
    const auto rsize = packet(r).size();
    // `{name}` is lower-cased and fully qualified (CoreDNS's state.Name()).
    CHECK(format_log_line(parse_log_format(kCommonLogFormat), d) ==
          "10.244.0.1:51246 - 3530 \"A IN kubernetes.default.svc.cluster.local. udp " +
              std::to_string(qsize) + " false 512\" NOERROR qr,aa,rd " + std::to_string(rsize) +
              " 0.000123s");
}

TEST_CASE("query log: the EDNS, TCP and IPv6 forms of the placeholders") {
    Message q = query_for("example.org", type::kAAAA, 7);
    q.edns = Edns{};
    q.edns->udp_size = 4096;
    q.edns->dnssec_ok = true;
    Message r = reply_to(q, Rcode::kServFail);
    r.header.aa = false;
    r.header.ra = true;
    auto line = [](const DescribedQuery& d) {
        return format_log_line(parse_log_format("{remote} {port} {proto} {>do} {>bufsize} {rcode} "
                                                "{>rflags} {>id} {>opcode} {type} {local}"),
                               d);
    };
    CHECK(line(describe(q, r)) == "10.244.0.1 51246 udp true 4096 SERVFAIL qr,rd,ra 7 0 AAAA -");
    // TCP: CoreDNS's state.Size() is the largest message.
    CHECK(line(describe(q, r, true, "fd00::1")) ==
          "[fd00::1] 51246 tcp true 65535 SERVFAIL qr,rd,ra 7 0 AAAA -");
    // An EDNS size under 512 is read as 512.
    q.edns->udp_size = 100;
    CHECK(line(describe(q, r)).find(" 512 ") != std::string::npos);
}

TEST_CASE("query log: the replacer keeps unknown placeholders and stray braces literal") {
    Message q = query_for("a.example", 4000);
    DescribedQuery d = describe(q, reply_to(q, Rcode::kNXDomain));
    CHECK(format_log_line(parse_log_format("{ {type} } {unknown} {/meta} x}"), d) ==
          "{ TYPE4000 } {unknown} - x}");
    CHECK(format_log_line(parse_log_format("{combined}"), d).ends_with(" \"0\""));
    // The shortcuts stand for the formats only as the whole text, as in CoreDNS's setup.
    CHECK(format_log_line(parse_log_format("x {common}"), d) == "x {common}");
    CHECK(format_log_line(parse_log_format("{proto} Request: {name} {type} {>id}"), d) ==
          "udp Request: a.example. TYPE4000 3530");
}

TEST_CASE("query log: response classes follow CoreDNS's Typify and Classify") {
    Message q = query_for("x.cluster.local", type::kA);
    Message answer = reply_to(q, Rcode::kNoError);
    answer.answers.push_back(a_record("x.cluster.local"));
    CHECK(classify_response(answer) == kClassSuccess);
    Message nodata = reply_to(q, Rcode::kNoError);
    nodata.authority.push_back(soa_record());
    CHECK(classify_response(nodata) == kClassDenial);
    Message nxdomain = reply_to(q, Rcode::kNXDomain);
    nxdomain.authority.push_back(soa_record());
    CHECK(classify_response(nxdomain) == kClassDenial);
    // NXDOMAIN without a SOA is OtherError for CoreDNS.
    CHECK(classify_response(reply_to(q, Rcode::kNXDomain)) == kClassError);
    CHECK(classify_response(reply_to(q, Rcode::kServFail)) == kClassError);
    CHECK(classify_response(reply_to(q, Rcode::kRefused)) == kClassError);
    CHECK(classify_response(reply_to(q, Rcode::kNoError)) == kClassSuccess);
}

TEST_CASE("query log: the block serving a name logs it, with its first matching rule") {
    DnsOptions options;
    options.listen = {HostPort{*IpAddress::parse("127.0.0.1"), 53}};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local\n log example.org \"ex {name}\"\n log\n errors\n}\n"
        "consul.local:53 {\n forward . 10.0.0.5\n}\n"
        "corp.local:53 {\n forward . 10.0.0.6\n log . {\n  class error\n }\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings);
    const QueryLogConfig& config = options.query_log;
    REQUIRE(config.blocks.size() == 3);
    CHECK(config.logs_queries());
    CHECK(config.logs_errors());
    auto wire = [](const char* name) { return name_lower(*name_from_text(name)); };
    const QueryLogRule* rule = config.rule_for(wire("www.example.org"));
    REQUIRE(rule);
    CHECK(rule->format.parts.front().text == "ex ");
    rule = config.rule_for(wire("kubernetes.default.svc.cluster.local"));
    REQUIRE(rule);
    CHECK(rule->classes == kClassAll);
    // A stub block without `log` keeps its names out of the `.` block's log.
    CHECK(config.rule_for(wire("web.consul.local")) == nullptr);
    CHECK_FALSE(config.block_for(wire("web.consul.local"))->errors);
    rule = config.rule_for(wire("db.corp.local"));
    REQUIRE(rule);
    CHECK(rule->classes == kClassError);
}

TEST_CASE("query log: a rule selects its classes, and any query slower than minDuration") {
    Message q = query_for("x.cluster.local", type::kA);
    DescribedQuery d = describe(q, reply_to(q, Rcode::kServFail));  // 0.000123 s
    QueryLogRule rule;
    rule.classes = kClassDenial;
    CHECK_FALSE(rule.selects(d));
    rule.min_duration_seconds = 0.0001;
    CHECK(rule.selects(d));
    rule.min_duration_seconds = 0.1;
    CHECK_FALSE(rule.selects(d));
    rule.classes = kClassError;
    CHECK(rule.selects(d));
}

TEST_CASE("query log: the errors plugin's line") {
    CHECK(format_error_line(2, name_lower(*name_from_text("WWW.example.com")), type::kA,
                            "read udp 10.0.0.1:41000->10.0.0.2:53: i/o timeout") ==
          "plugin/errors: 2 www.example.com. A: read udp 10.0.0.1:41000->10.0.0.2:53: i/o timeout");
}

TEST_CASE("query log: miekg/dns's names for types, classes and rcodes") {
    CHECK(type_text(type::kSRV) == "SRV");
    CHECK(type_text(65) == "HTTPS");
    CHECK(type_text(4000) == "TYPE4000");
    CHECK(class_text(3) == "CH");
    CHECK(class_text(9) == "CLASS9");
    CHECK(rcode_text(3) == "NXDOMAIN");
    CHECK(rcode_text(9) == "NOTAUTH");
    CHECK(rcode_text(12) == "12");
}
