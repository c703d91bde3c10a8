// ShardedMap's contract over random writes: every copy behaves as an
// independent value (a write to one never changes what another finds,
// iterates or counts, nor moves what a pointer into it points at), whatever
// the shard count (one shard, a partial last block, many blocks).
#include <catch.hpp>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "dns/zone/sharded_map.h"

namespace sb::dns {
namespace {

using Map = ShardedMap<int, std::string>;
using Model = std::map<int, std::string>;

constexpr int kKeys = 400;

struct Copy {
    Map map;
    Model model;
};

// Lookups and iteration agree with the model. A few assertions per call, not
// one per key: this runs after every operation, also under TSan.
void check(const Copy& copy) {
    REQUIRE(copy.map.size() == copy.model.size());
    Model found;
    for (int key = 0; key < kKeys; ++key) {
        if (const std::string* value = copy.map.find(key)) found.emplace(key, *value);
    }
    REQUIRE(found == copy.model);
    Model seen;
    bool each_once = true;
    copy.map.for_each([&](int key, const std::string& value) {
        each_once = seen.emplace(key, value).second && each_once;
    });
    REQUIRE(each_once);
    REQUIRE(seen == copy.model);
}

TEST_CASE("ShardedMap copies stay independent over random writes") {
    auto shard_count = GENERATE(size_t{1}, size_t{7}, size_t{100}, size_t{4096});
    CAPTURE(shard_count);
    std::mt19937 random(static_cast<uint32_t>(shard_count));
    auto pick = [&random](size_t n) {
        return std::uniform_int_distribution<size_t>(0, n - 1)(random);
    };
    std::vector<std::unique_ptr<Copy>> copies;
    copies.push_back(std::make_unique<Copy>(Copy{Map(shard_count), {}}));
    for (int round = 0; round < 3000; ++round) {
        const size_t target = pick(copies.size());
        Copy& copy = *copies[target];
        // A pointer into another copy, which the write below must not move
        // or change.
        const Copy* other =
            copies.size() > 1 ? copies[(target + 1) % copies.size()].get() : nullptr;
        const std::string* pinned = nullptr;
        std::string pinned_value;
        int pinned_key = static_cast<int>(pick(kKeys));
        if (other && other->model.count(pinned_key)) {
            pinned = other->map.find(pinned_key);
            pinned_value = *pinned;
        }
        const int key = static_cast<int>(pick(kKeys));
        switch (pick(6)) {
            case 0:  // a new copy, or one copy assigned over another
                if (copies.size() < 6) {
                    copies.push_back(std::make_unique<Copy>(copy));
                } else {
                    *copies[pick(copies.size())] = copy;
                    pinned = nullptr;  // the pinned copy may be the one overwritten
                }
                break;
            case 1:
                if (copies.size() > 1) {
                    copies.erase(copies.begin() + static_cast<std::ptrdiff_t>(target));
                    pinned = nullptr;
                }
                break;
            case 2:
                copy.map.erase(key);
                copy.model.erase(key);
                break;
            case 3: {
                bool added = false;
                copy.map.writable(key, added) += "w";
                REQUIRE(added == !copy.model.count(key));
                copy.model[key] += "w";
                break;
            }
            default: {
                std::string value = std::to_string(round);
                copy.map.set(key, value);
                copy.model[key] = value;
                break;
            }
        }
        if (pinned) {
            REQUIRE(other->map.find(pinned_key) == pinned);
            REQUIRE(*pinned == pinned_value);
        }
        for (const auto& each : copies) check(*each);
    }
}

}  // namespace
}  // namespace sb::dns
