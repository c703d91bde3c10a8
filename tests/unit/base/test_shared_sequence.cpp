// SharedSequence: a vector's reads, copy-on-write writes, and sequences
// derived by append_shared() that share entries without copying them.
#include <catch.hpp>

#include <random>
#include <string>
#include <vector>

#include "base/containers/shared_sequence.h"

using sb::SharedSequence;

namespace {

// Small chunks and pages, so a few dozen values span many of them.
using Sequence = SharedSequence<std::string, 4, 4>;

std::vector<std::string> values_of(const Sequence& s) {
    return {s.begin(), s.end()};
}

Sequence numbered(int n) {
    Sequence s;
    for (int i = 0; i < n; ++i) s.push_back(std::to_string(i));
    return s;
}

}  // namespace

TEST_CASE("reads behave as a vector's") {
    Sequence s = numbered(11);
    REQUIRE(s.size() == 11);
    for (size_t i = 0; i < s.size(); ++i) CHECK(s[i] == std::to_string(i));
    CHECK(s.front() == "0");
    CHECK(s.back() == "10");
    CHECK(s.end() - s.begin() == 11);
    CHECK(*(s.begin() + 7) == "7");
    CHECK((s.begin() + 7)[2] == "9");
    CHECK(std::partition_point(s.begin(), s.end(),
                               [](const std::string& v) { return std::stoi(v) < 6; }) -
              s.begin() ==
          6);
    CHECK_THROWS_AS(s.at(11), std::out_of_range);
    s.pop_back();
    s.pop_back();
    CHECK(values_of(s) == values_of(numbered(9)));
    CHECK(Sequence{} == Sequence(std::vector<std::string>{}));
}

TEST_CASE("a write to a copy detaches only what it writes") {
    const Sequence original = numbered(10);
    Sequence copy = original;
    copy[5] = "five";
    CHECK(original[5] == "5");
    CHECK(copy[5] == "five");
    CHECK(copy.entry(4) == original.entry(4));  // the rest stays shared
    CHECK(copy.entry(5) != original.entry(5));
    CHECK_FALSE(copy == original);
    copy[5] = "5";
    CHECK(copy == original);  // equal by value, though no longer shared
}

TEST_CASE("append_shared shares the entries of another sequence") {
    const Sequence before = numbered(30);
    // Replace 12..14 by two values, as a partial replan does.
    Sequence after;
    after.append_shared(before.begin(), before.begin() + 12);
    after.push_back(std::string("x"));
    after.push_back(std::string("y"));
    after.append_shared(before.begin() + 15, before.end());
    std::vector<std::string> expected = values_of(before);
    expected.erase(expected.begin() + 12, expected.begin() + 15);
    expected.insert(expected.begin() + 12, {"x", "y"});
    CHECK(values_of(after) == expected);
    for (size_t i = 0; i < 12; ++i) CHECK(after.entry(i) == before.entry(i));
    for (size_t i = 15; i < 30; ++i) CHECK(after.entry(i - 1) == before.entry(i));
    after[0] = "zero";
    CHECK(before[0] == "0");
}

// Pages of 2 chunks make most edits cross a page's edge; pages of 4 let
// whole pages be taken and short ones merged.
TEMPLATE_TEST_CASE("random edits of derived sequences match a vector model", "",
                   (SharedSequence<std::string, 4, 2>), (SharedSequence<std::string, 4, 4>),
                   (SharedSequence<std::string, 2, 3>)) {
    using Derived = TestType;
    std::mt19937 random(11);
    Derived current;
    for (int i = 0; i < 200; ++i) current.push_back(std::to_string(i));
    std::vector<std::string> model(current.begin(), current.end());
    std::vector<std::pair<Derived, std::vector<std::string>>> kept;  // older versions
    for (int round = 0; round < 800; ++round) {
        const size_t size = current.size();
        const size_t at = size == 0 ? 0 : random() % (size + 1);
        const size_t removed = std::min<size_t>(random() % 3, size - at);
        const size_t added = random() % 3;
        Derived next;
        next.append_shared(current.begin(), current.begin() + static_cast<std::ptrdiff_t>(at));
        std::vector<std::string> next_model(model.begin(), model.begin() + at);
        for (size_t k = 0; k < added; ++k) {
            std::string value = "r" + std::to_string(round) + "." + std::to_string(k);
            next.push_back(value);
            next_model.push_back(value);
        }
        next.append_shared(current.begin() + static_cast<std::ptrdiff_t>(at + removed),
                           current.end());
        next_model.insert(next_model.end(), model.begin() + at + removed, model.end());
        if (!next.empty() && random() % 4 == 0) {
            const size_t written = random() % next.size();
            next[written] = "w" + std::to_string(round);
            next_model[written] = "w" + std::to_string(round);
        }
        if (!next.empty() && random() % 8 == 0) {
            next.pop_back();
            next_model.pop_back();
        }
        if (round % 50 == 0) kept.emplace_back(current, model);
        current = std::move(next);
        model = std::move(next_model);
        REQUIRE(std::vector<std::string>(current.begin(), current.end()) == model);
        for (size_t i = 0; i < model.size(); i += 7) REQUIRE(current[i] == model[i]);
    }
    for (const auto& [sequence, values] : kept) {
        CHECK(std::vector<std::string>(sequence.begin(), sequence.end()) == values);
    }
}
