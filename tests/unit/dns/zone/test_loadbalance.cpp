#include <catch.hpp>
#include <set>

#include "dns/zone/loadbalance.h"

using namespace sb;
using namespace sb::dns;

namespace {

Record rr(uint16_t rtype, std::string rdata) {
    return Record{*name_from_text("a.example"), rtype, kClassIN, 30, std::move(rdata)};
}

Message reply_with(std::vector<Record> answers) {
    Message m;
    m.header.qr = true;
    m.questions.push_back({*name_from_text("a.example"), type::kA, kClassIN});
    m.answers = std::move(answers);
    return m;
}

}  // namespace

TEST_CASE("loadbalance: an address RRset comes in more than one order over seeds") {
    std::vector<Record> records;
    for (char c = 'a'; c < 'a' + 6; ++c) records.push_back(rr(type::kA, std::string(4, c)));
    std::set<std::string> firsts;
    for (uint64_t seed = 0; seed < 64; ++seed) {
        Message m = reply_with(records);
        load_balance(m, seed);
        REQUIRE(m.answers.size() == records.size());
        CHECK(std::is_permutation(m.answers.begin(), m.answers.end(), records.begin()));
        firsts.insert(m.answers[0].rdata);
    }
    CHECK(firsts.size() > 1);
}

TEST_CASE("loadbalance: mixed sections are CNAME, other, addresses, MX") {
    Message m = reply_with({rr(type::kA, "aaaa"), rr(type::kMX, "mx"), rr(type::kTXT, "txt"),
                            rr(type::kCNAME, "cname"), rr(type::kA, "bbbb")});
    load_balance(m, 7);
    REQUIRE(m.answers.size() == 5);
    CHECK(m.answers[0].rtype == type::kCNAME);
    CHECK(m.answers[1].rtype == type::kTXT);
    CHECK(m.answers[2].rtype == type::kA);
    CHECK(m.answers[3].rtype == type::kA);
    CHECK(m.answers[4].rtype == type::kMX);
}

TEST_CASE("loadbalance: error replies keep their order") {
    std::vector<Record> records = {rr(type::kA, "aaaa"), rr(type::kMX, "mx"),
                                   rr(type::kCNAME, "cname")};
    Message m = reply_with(records);
    m.header.rcode = static_cast<uint8_t>(Rcode::kNXDomain);
    load_balance(m, 7);
    CHECK(m.answers == records);
}
