// AddressIndex's contract over random writes: every copy behaves as an
// independent multimap from address to values (a write to one never changes
// what another finds, iterates or counts), the values of an address in the
// order added, for IPv4 and IPv6 addresses alike and whatever the shard
// count.
#include "dns/zone/address_index.h"

#include <catch.hpp>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace sb::dns {
namespace {

struct Value {
    uint64_t id = 0;
    const void* owner = nullptr;
    bool operator==(const Value&) const = default;
};
using Index = AddressIndex<Value>;
using Model = std::map<IpAddress, std::vector<Value>>;  // no empty vector

struct Copy {
    Index index;
    Model model;
};

std::vector<IpAddress> address_pool() {
    std::vector<IpAddress> pool;
    for (int i = 0; i < 60; ++i) pool.push_back(*IpAddress::parse("10.0.0." + std::to_string(i)));
    for (int i = 0; i < 20; ++i) {
        pool.push_back(*IpAddress::parse("fd00::" + std::to_string(i)));
    }
    pool.push_back(*IpAddress::parse("::a00:1"));  // its last 4 bytes are 10.0.0.1's
    return pool;
}

// Lookups, iteration and the count agree with the model.
void check(const Copy& copy, const std::vector<IpAddress>& pool) {
    REQUIRE(copy.index.address_count() == copy.model.size());
    Model found;
    for (const IpAddress& address : pool) {
        copy.index.for_each_at(address, [&](const Value& v) { found[address].push_back(v); });
    }
    REQUIRE(found == copy.model);
    Model seen;
    bool each_once = true;
    copy.index.for_each_address([&](const IpAddress& address, const std::vector<Value>& values) {
        each_once = !values.empty() && seen.emplace(address, values).second && each_once;
    });
    REQUIRE(each_once);
    REQUIRE(seen == copy.model);
}

TEST_CASE("AddressIndex copies stay independent over random writes") {
    auto shard_count = GENERATE(size_t{1}, size_t{7}, size_t{100}, size_t{4096});
    CAPTURE(shard_count);
    const std::vector<IpAddress> pool = address_pool();
    std::mt19937 random(static_cast<uint32_t>(shard_count));
    auto pick = [&random](size_t n) {
        return std::uniform_int_distribution<size_t>(0, n - 1)(random);
    };
    static const int kOwners[3] = {};
    std::vector<std::unique_ptr<Copy>> copies;
    copies.push_back(std::make_unique<Copy>(Copy{Index(shard_count), {}}));
    for (uint64_t round = 0; round < 3000; ++round) {
        const size_t target = pick(copies.size());
        Copy& copy = *copies[target];
        const IpAddress& address = pool[pick(pool.size())];
        const void* owner = &kOwners[pick(3)];
        switch (pick(6)) {
            case 0:  // a new copy, or one copy assigned over another
                if (copies.size() < 6) {
                    copies.push_back(std::make_unique<Copy>(copy));
                } else {
                    *copies[pick(copies.size())] = copy;
                }
                break;
            case 1:
                if (copies.size() > 1) {
                    copies.erase(copies.begin() + static_cast<std::ptrdiff_t>(target));
                }
                break;
            case 2: {  // the values of one owner at the address go
                auto matches = [owner](const Value& v) { return v.owner == owner; };
                copy.index.erase_if(address, matches);
                auto it = copy.model.find(address);
                if (it != copy.model.end()) {
                    std::erase_if(it->second, matches);
                    if (it->second.empty()) copy.model.erase(it);
                }
                break;
            }
            case 3:
                copy.index.shrink_to_fit();
                break;
            default:
                copy.index.add(address, Value{round, owner});
                copy.model[address].push_back(Value{round, owner});
                break;
        }
        for (const auto& each : copies) check(*each, pool);
    }
}

TEST_CASE("AddressIndex packs a record: the address's bytes and the value") {
    // What the zone relies on for its 550k reverse names at 50k Services
    // (docs/dns.md, "Zone memory").
    STATIC_REQUIRE(Index::record_size(IpFamily::kV4) == 24);
    STATIC_REQUIRE(Index::record_size(IpFamily::kV6) == 32);
}

}  // namespace
}  // namespace sb::dns
