#include <catch.hpp>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "watch/persistent_map.h"

using sb::watch::PersistentMap;

namespace {

using Map = PersistentMap<std::string, int>;

std::vector<std::pair<std::string, int>> contents(const Map& map) {
    std::vector<std::pair<std::string, int>> out;
    for (const auto& [key, value] : map) out.emplace_back(key, value);
    return out;
}

std::vector<std::pair<std::string, int>> contents(const std::map<std::string, int>& map) {
    return {map.begin(), map.end()};
}

}  // namespace

TEST_CASE("a persistent map reads like std::map under random writes, in key order") {
    std::mt19937 random(11);
    Map map;
    std::map<std::string, int> reference;
    for (int step = 0; step < 5000; ++step) {
        const std::string key = "k" + std::to_string(random() % 400);
        if (random() % 3 == 0) {
            CHECK(map.erase(key) == (reference.erase(key) == 1));
        } else {
            const int value = static_cast<int>(random() % 1000);
            map.set(key, value);
            reference[key] = value;
        }
        REQUIRE(map.size() == reference.size());
    }
    CHECK(contents(map) == contents(reference));
    for (int k = 0; k < 400; ++k) {
        const std::string key = "k" + std::to_string(k);
        const int* found = map.find(key);
        auto expected = reference.find(key);
        REQUIRE((found != nullptr) == (expected != reference.end()));
        if (found) CHECK(*found == expected->second);
    }
}

TEST_CASE("a copy keeps its contents while the original is written, and the reverse") {
    Map map;
    for (int k = 0; k < 100; ++k) map.set("k" + std::to_string(k), k);
    const Map copy = map;
    const auto before = contents(copy);
    map.set("k5", -5);
    map.erase("k6");
    map.set("new", 1);
    CHECK(contents(copy) == before);
    CHECK(*copy.find("k5") == 5);
    CHECK(*map.find("k5") == -5);
    CHECK_FALSE(map.contains("k6"));
    CHECK(copy.contains("k6"));
    CHECK(map.size() == 100);

    Map other = copy;
    other.erase("k1");
    CHECK(copy.contains("k1"));
    CHECK_FALSE(map.erase("absent"));
    CHECK(map.size() == 100);
}

TEST_CASE("an empty persistent map iterates nothing") {
    const Map map;
    CHECK(map.begin() == map.end());
    CHECK(map.empty());
    CHECK(map.find("x") == nullptr);
}
