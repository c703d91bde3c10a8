// The order a set's policy gives one query's upstreams, and the pick that
// skips down upstreams (CoreDNS's forward.go and policy.go).
#include <catch.hpp>

#include <algorithm>
#include <set>

#include "dns/forward/forward_policy.h"

using namespace sb::dns;

namespace {

auto no_random = [] { return uint64_t{0}; };

}  // namespace

TEST_CASE("policy: sequential is the configured order, every query") {
    for (uint64_t turn = 1; turn < 4; ++turn) {
        CHECK(upstream_order(UpstreamPolicy::kSequential, 3, turn, 2, no_random) ==
              std::vector<size_t>{0, 1, 2});
    }
}

TEST_CASE("policy: round_robin puts the turn's upstream first, then the others in order") {
    // CoreDNS's TestList: the first query (turn 1) asks 2.2.2.2, 1.1.1.1, 3.3.3.3.
    CHECK(upstream_order(UpstreamPolicy::kRoundRobin, 3, 1, 0, no_random) ==
          std::vector<size_t>{1, 0, 2});
    CHECK(upstream_order(UpstreamPolicy::kRoundRobin, 3, 2, 0, no_random) ==
          std::vector<size_t>{2, 0, 1});
    CHECK(upstream_order(UpstreamPolicy::kRoundRobin, 3, 3, 0, no_random) ==
          std::vector<size_t>{0, 1, 2});
}

TEST_CASE("policy: preferred starts at the last upstream that answered and wraps") {
    CHECK(upstream_order(UpstreamPolicy::kPreferred, 3, 7, 0, no_random) ==
          std::vector<size_t>{0, 1, 2});
    CHECK(upstream_order(UpstreamPolicy::kPreferred, 3, 7, 2, no_random) ==
          std::vector<size_t>{2, 0, 1});
}

TEST_CASE("policy: random gives a permutation per query, each upstream first in turn") {
    uint64_t state = 0;
    auto splitmix = [&state] {  // a fixed sequence: the test cannot flake
        uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    };
    std::set<size_t> firsts;
    for (int query = 0; query < 12; ++query) {
        auto order = upstream_order(UpstreamPolicy::kRandom, 3, 0, 0, splitmix);
        auto sorted = order;
        std::sort(sorted.begin(), sorted.end());
        CHECK(sorted == std::vector<size_t>{0, 1, 2});
        firsts.insert(order.front());
    }
    CHECK(firsts == std::set<size_t>{0, 1, 2});
}

TEST_CASE("policy: one upstream or none is its own order") {
    for (auto policy : {UpstreamPolicy::kRandom, UpstreamPolicy::kRoundRobin,
                        UpstreamPolicy::kSequential, UpstreamPolicy::kPreferred}) {
        CHECK(upstream_order(policy, 1, 5, 0, no_random) == std::vector<size_t>{0});
        CHECK(upstream_order(policy, 0, 5, 0, no_random).empty());
    }
}

TEST_CASE("pick: down upstreams are skipped, the next attempt starts after the pick") {
    const std::vector<size_t> order = {4, 7, 9};
    auto down_7 = [](size_t upstream) { return upstream == 7; };
    UpstreamPick first = pick_upstream(order, 0, down_7, 0);
    CHECK(first.index == 4);
    CHECK_FALSE(first.all_down);
    UpstreamPick second = pick_upstream(order, first.next_position, down_7, 0);
    CHECK(second.index == 9);
    UpstreamPick third = pick_upstream(order, second.next_position, down_7, 0);
    CHECK(third.index == 4);  // wrapped
}

TEST_CASE("pick: when every upstream is down a random one is asked") {
    const std::vector<size_t> order = {4, 7, 9};
    auto all = [](size_t) { return true; };
    UpstreamPick pick = pick_upstream(order, 0, all, 5);
    CHECK(pick.all_down);
    CHECK(pick.index == 9);  // 5 % 3
}
