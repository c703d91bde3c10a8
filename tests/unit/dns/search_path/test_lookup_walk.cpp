// The walk a Pod's stub resolver makes (dns/search_path/lookup_walk.h): glibc's order of
// names, ndots, and which outcomes end the walk.
#include <catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "dns/search_path/lookup_walk.h"

using namespace sb;
using namespace sb::dns;

namespace {

using Strings = std::vector<std::string>;
const Strings kSearches = {"a.svc.cluster.local", "svc.cluster.local", "cluster.local"};

Strings candidates(const std::string& name, const Strings& searches = kSearches, int ndots = 5) {
    auto names = lookup_candidates(name, searches, ndots);
    REQUIRE(names);
    return *names;
}

Record a_record(const std::string& text) {
    return Record{*name_from_text(text), type::kA, kClassIN, 30,
                  std::string("\x0a\x00\x00\x01", 4)};
}

// An asker answering from a table of text names; every other name is NXDOMAIN.
LookupAsk table(std::map<std::string, LookupAnswer::Outcome> outcomes, Strings& asked) {
    return [outcomes = std::move(outcomes), &asked](const std::string& wire, uint16_t) {
        const std::string text = name_to_text(wire);
        asked.push_back(text);
        LookupAnswer answer;
        auto it = outcomes.find(text);
        answer.outcome = it == outcomes.end() ? LookupAnswer::Outcome::kNXDomain : it->second;
        if (answer.outcome == LookupAnswer::Outcome::kAnswer) answer.answers = {a_record(text)};
        return answer;
    };
}

}  // namespace

TEST_CASE("lookup: fewer dots than ndots: the search list first, then the name") {
    CHECK(candidates("web") == Strings{"web.a.svc.cluster.local.", "web.svc.cluster.local.",
                                       "web.cluster.local.", "web."});
    SearchOrder order{};
    size_t dots = 0;
    REQUIRE(lookup_candidates("api.example.com", kSearches, 5, &order, &dots));
    CHECK(order == SearchOrder::kSearchFirst);
    CHECK(dots == 2);
}

TEST_CASE("lookup: at least ndots dots: the name first, then the search list") {
    CHECK(candidates("api.example.com", kSearches, 2) ==
          Strings{"api.example.com.", "api.example.com.a.svc.cluster.local.",
                  "api.example.com.svc.cluster.local.", "api.example.com.cluster.local."});
}

TEST_CASE("lookup: a trailing dot is the name only") {
    CHECK(candidates("web.a.svc.cluster.local.") == Strings{"web.a.svc.cluster.local."});
}

TEST_CASE("lookup: the root on the search list is the name itself, asked once") {
    CHECK(candidates("web", {"."}, 1) == Strings{"web."});
    CHECK(candidates("web", {"x.example", "."}, 1) == Strings{"web.x.example.", "web."});
}

TEST_CASE("lookup: a name asked twice is asked once, and names over 255 bytes are left out") {
    CHECK(candidates("web", {"x.example", "X.Example"}, 1) == Strings{"web.x.example.", "web."});
    const std::string long_domain = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                                    std::string(63, 'c') + "." + std::string(50, 'd');
    CHECK(candidates(std::string(20, 'w'), {long_domain, "ok.example"}, 1) ==
          Strings{std::string(20, 'w') + ".ok.example.", std::string(20, 'w') + "."});
}

TEST_CASE("lookup: a name that is not a DNS name is an error") {
    for (const char* bad : {"", ".", "a..b", "a.."})
        CHECK_FALSE(lookup_candidates(bad, kSearches, 5));
    CHECK_FALSE(lookup_candidates(std::string(64, 'a'), kSearches, 5));
}

TEST_CASE("lookup: ndots from the options, the last winning, capped at 15") {
    CHECK(ndots_from_options({}) == 1);
    CHECK(ndots_from_options({"edns0", "ndots:5"}) == 5);
    CHECK(ndots_from_options({"ndots:5", "ndots:2"}) == 2);
    CHECK(ndots_from_options({"ndots:40"}) == 15);
    CHECK(ndots_from_options({"ndots:x"}) == 0);
}

TEST_CASE("lookup: the walk stops at the first answer") {
    Strings asked;
    auto walk =
        walk_lookup("web.b", type::kA, kSearches, 5,
                    table({{"web.b.svc.cluster.local.", LookupAnswer::Outcome::kAnswer}}, asked));
    REQUIRE(walk);
    CHECK(asked == Strings{"web.b.a.svc.cluster.local.", "web.b.svc.cluster.local."});
    REQUIRE(walk->answered);
    CHECK(*walk->answered == 1);
    CHECK(walk->candidates.size() == 4);
}

TEST_CASE("lookup: NODATA and SERVFAIL go on, as glibc goes on") {
    Strings asked;
    auto walk = walk_lookup("web", type::kA, kSearches, 5,
                            table({{"web.a.svc.cluster.local.", LookupAnswer::Outcome::kNoData},
                                   {"web.svc.cluster.local.", LookupAnswer::Outcome::kServFail},
                                   {"web.", LookupAnswer::Outcome::kAnswer}},
                                  asked));
    REQUIRE(walk);
    CHECK(asked.size() == 4);
    CHECK(walk->answered == 3u);
}

TEST_CASE("lookup: no reply or REFUSED ends the walk unanswered") {
    for (auto stop : {LookupAnswer::Outcome::kNoReply, LookupAnswer::Outcome::kRefused}) {
        Strings asked;
        auto walk = walk_lookup("web", type::kA, kSearches, 5,
                                table({{"web.svc.cluster.local.", stop}}, asked));
        REQUIRE(walk);
        CHECK(asked == Strings{"web.a.svc.cluster.local.", "web.svc.cluster.local."});
        CHECK_FALSE(walk->answered);
    }
}

TEST_CASE("lookup: every name NXDOMAIN asks the whole list") {
    Strings asked;
    auto walk = walk_lookup("nothing", type::kA, kSearches, 5, table({}, asked));
    REQUIRE(walk);
    CHECK(asked.size() == 4);
    CHECK_FALSE(walk->answered);
}

TEST_CASE("lookup: a reply's outcome for the type asked") {
    Message reply;
    reply.header.qr = true;
    CHECK(outcome_of(reply, type::kA) == LookupAnswer::Outcome::kNoData);
    reply.answers.push_back(a_record("web."));
    CHECK(outcome_of(reply, type::kA) == LookupAnswer::Outcome::kAnswer);
    CHECK(outcome_of(reply, type::kAAAA) == LookupAnswer::Outcome::kNoData);
    reply.header.rcode = static_cast<uint8_t>(Rcode::kNXDomain);
    CHECK(outcome_of(reply, type::kA) == LookupAnswer::Outcome::kNXDomain);
    reply.header.rcode = static_cast<uint8_t>(Rcode::kServFail);
    CHECK(outcome_of(reply, type::kA) == LookupAnswer::Outcome::kServFail);
    reply.header.rcode = static_cast<uint8_t>(Rcode::kRefused);
    CHECK(outcome_of(reply, type::kA) == LookupAnswer::Outcome::kRefused);
}
