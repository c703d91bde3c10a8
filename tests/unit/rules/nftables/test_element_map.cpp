// ElementMap against std::map<ElementKey, Verdict> as the oracle: the same
// elements, values and order after random insertions, reassignments and
// erasures across chunk splits, merges and compaction, with IPv4 records and after the
// switch to wide (IPv6) ones, and in the shapes of pair and backend maps;
// chain names stored once and freed.
#include <catch.hpp>

#include <map>
#include <random>
#include <stdexcept>
#include <vector>

#include "rules/nftables/element_map.h"

using namespace sb;
using namespace sb::rules::nftables;

namespace {

using Oracle = std::map<ElementKey, Verdict>;

void require_same(const ElementMap& m, const Oracle& oracle) {
    REQUIRE(m.size() == oracle.size());
    REQUIRE(m.empty() == oracle.empty());
    auto it = m.begin();
    for (const auto& [key, value] : oracle) {
        REQUIRE(it != m.end());
        REQUIRE(it->first == key);
        REQUIRE(it->second == value);
        ++it;
    }
    REQUIRE(it == m.end());
}

IpAddress v6(uint32_t low) {
    uint8_t bytes[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    for (int i = 0; i < 4; ++i) bytes[12 + i] = static_cast<uint8_t>(low >> (24 - 8 * i));
    return IpAddress::from_bytes(IpFamily::kV6, bytes);
}

// Random keys over a small space, so that insertions hit present keys and
// erasures hit absent ones; values with and without chains.
struct Generator {
    std::mt19937 rng{11};
    bool with_v6 = false;
    uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); }
    IpAddress address() {
        const uint32_t n = 0x0a000000u + pick(600);
        return with_v6 && pick(4) == 0 ? v6(n) : IpAddress::v4(n);
    }
    ElementKey key() {
        return ElementKey{address(), pick(2) ? address() : IpAddress{},
                          static_cast<uint8_t>(6 + pick(2) * 11),
                          static_cast<uint16_t>(80 + pick(3)), pick(4)};
    }
    Verdict value() {
        switch (pick(3)) {
            case 0:
                return Verdict{VerdictKind::kGoto, "chain-" + std::to_string(pick(20))};
            case 1:
                return Verdict{
                    VerdictKind::kNone, {}, address(), static_cast<uint16_t>(8000 + pick(5))};
            default:
                return Verdict{};
        }
    }
};

void random_operations(ElementMap& m, Oracle& oracle, Generator& g, int count) {
    for (int i = 0; i < count; ++i) {
        const ElementKey k = g.key();
        switch (g.pick(4)) {
            case 0: {
                const Verdict v = g.value();
                const auto [at, added] = m.emplace(k, v);
                const auto [want, want_added] = oracle.emplace(k, v);
                REQUIRE(added == want_added);
                REQUIRE(at->first == want->first);
                REQUIRE(at->second == want->second);
                break;
            }
            case 1: {
                const Verdict v = g.value();
                m.insert_or_assign(k, v);
                oracle.insert_or_assign(k, v);
                break;
            }
            default:
                REQUIRE(m.erase(k) == oracle.erase(k));
        }
        REQUIRE(m.count(k) == oracle.count(k));
    }
}

}  // namespace

TEST_CASE("element map: the same elements, values and order as std::map") {
    Generator g;
    ElementMap m;
    Oracle oracle;
    // Growth first (inserts outnumber erasures), so chunks fill and split.
    for (int round = 0; round < 4; ++round) {
        for (int i = 0; i < 3000; ++i) {
            const ElementKey k = g.key();
            const Verdict v = g.value();
            REQUIRE(m.emplace(k, v).second == oracle.emplace(k, v).second);
        }
        random_operations(m, oracle, g, 3000);
        require_same(m, oracle);
    }
    REQUIRE(m.size() > 3 * ElementMap::kChunk);  // several chunks took part

    SECTION("lookups") {
        for (int i = 0; i < 2000; ++i) {
            const ElementKey k = g.key();
            auto want = oracle.find(k);
            auto got = m.find(k);
            REQUIRE((got == m.end()) == (want == oracle.end()));
            if (want != oracle.end()) {
                REQUIRE(got->second == want->second);
                REQUIRE(m.at(k) == want->second);
            } else {
                REQUIRE_THROWS_AS(m.at(k), std::out_of_range);
            }
        }
    }
    SECTION("IPv6 elements switch the map to wide records, keeping everything") {
        g.with_v6 = true;
        const ElementKey wide{v6(1), {}, 6, 80, 0};
        m.emplace(wide, Verdict{VerdictKind::kAccept});
        oracle.emplace(wide, Verdict{VerdictKind::kAccept});
        require_same(m, oracle);
        random_operations(m, oracle, g, 8000);
        require_same(m, oracle);
    }
    SECTION("compacted: the same elements, and changes work on full chunks") {
        m.compact();
        require_same(m, oracle);
        random_operations(m, oracle, g, 3000);
        require_same(m, oracle);
        m.compact();
        require_same(m, oracle);
    }
    SECTION("an IPv6 key is absent from a map of IPv4 records") {
        REQUIRE(m.find(ElementKey{v6(1), {}, 6, 80, 0}) == m.end());
        REQUIRE(m.erase(ElementKey{v6(1), {}, 6, 80, 0}) == 0);
        require_same(m, oracle);
    }
    SECTION("erasing everything leaves an empty map that fills again") {
        const std::vector<ElementKey> keys = [&] {
            std::vector<ElementKey> out;
            for (const auto& [key, _] : oracle) out.push_back(key);
            return out;
        }();
        for (size_t i = 0; i < keys.size(); i += 2) REQUIRE(m.erase(keys[i]) == 1);
        for (size_t i = 1; i < keys.size(); i += 2) REQUIRE(m.erase(keys[i]) == 1);
        REQUIRE(m.empty());
        REQUIRE(m.begin() == m.end());
        oracle.clear();
        random_operations(m, oracle, g, 3000);
        require_same(m, oracle);
    }
}

TEST_CASE("element map: equality compares elements, not chain ids") {
    const ElementKey k1{IpAddress::v4(1), {}, 6, 80, 0};
    const ElementKey k2{IpAddress::v4(2), {}, 6, 80, 0};
    ElementMap a;
    a.emplace(k1, Verdict{VerdictKind::kGoto, "x"});
    a.emplace(k2, Verdict{VerdictKind::kGoto, "y"});
    ElementMap b;  // "y" takes id 1 here, "x" id 2
    b.emplace(k2, Verdict{VerdictKind::kGoto, "y"});
    b.emplace(k1, Verdict{VerdictKind::kGoto, "x"});
    REQUIRE(a == b);
    b.insert_or_assign(k1, Verdict{VerdictKind::kGoto, "z"});
    REQUIRE_FALSE(a == b);
    b.erase(k1);
    REQUIRE_FALSE(a == b);
    ElementMap copy = a;
    REQUIRE(copy == a);
    copy.clear();
    REQUIRE(copy.empty());
    REQUIRE_FALSE(copy == a);
}

TEST_CASE("element map: values keep their chain names while chain ids are freed and reused") {
    ElementMap m;
    const ElementKey k{IpAddress::v4(1), {}, 6, 80, 0};
    m.emplace(k, Verdict{VerdictKind::kGoto, "first"});
    m.insert_or_assign(k, Verdict{VerdictKind::kGoto, "second"});
    REQUIRE(m.at(k) == Verdict{VerdictKind::kGoto, "second"});
    const ElementKey other{IpAddress::v4(2), {}, 6, 80, 0};
    m.emplace(other, Verdict{VerdictKind::kJump, "first"});
    REQUIRE(m.at(k) == Verdict{VerdictKind::kGoto, "second"});
    REQUIRE(m.at(other) == Verdict{VerdictKind::kJump, "first"});
    m.erase(k);
    m.emplace(k, Verdict{VerdictKind::kGoto, "third"});
    REQUIRE(m.at(k) == Verdict{VerdictKind::kGoto, "third"});
    REQUIRE(m.at(other) == Verdict{VerdictKind::kJump, "first"});
}

TEST_CASE(
    "element map: records take the shape of the elements, and move up when one does not fit") {
    // The hairpin sets (address pairs) and the backend maps hold most of
    // the kept model's elements (docs/nftables.md, "Memory").
    Generator g;
    auto pair = [&g] { return ElementKey{g.address(), g.address(), 0, 0, 0}; };
    auto backend_key = [&g] {
        return ElementKey{g.address(), {}, 6, static_cast<uint16_t>(80 + g.pick(3)), g.pick(4)};
    };
    auto backend_value = [&g] {
        return Verdict{VerdictKind::kNone, {}, g.address(), static_cast<uint16_t>(8080)};
    };
    ElementMap m;
    Oracle oracle;
    // 2000 assignments of make_key() -> make_value(), a third of them
    // followed by the erasure of another key, in both maps.
    auto fill = [&](auto make_key, auto make_value) {
        for (int i = 0; i < 2000; ++i) {
            const ElementKey k = make_key();
            const Verdict v = make_value();
            m.insert_or_assign(k, v);
            oracle.insert_or_assign(k, v);
            if (i % 3 == 0) {
                const ElementKey gone = make_key();
                REQUIRE(m.erase(gone) == oracle.erase(gone));
            }
        }
    };
    SECTION("pairs") {
        fill(pair, [] { return Verdict{}; });
        REQUIRE(m.record_size() == 8);
        require_same(m, oracle);
        // Absent: keys no pair record can hold.
        REQUIRE(m.find(backend_key()) == m.end());
        REQUIRE(m.erase(ElementKey{v6(1), v6(2), 0, 0, 0}) == 0);
        m.compact();
        require_same(m, oracle);
        const ElementKey verdict{IpAddress::v4(7), {}, 6, 80, 0};
        m.emplace(verdict, Verdict{VerdictKind::kGoto, "chain"});
        oracle.emplace(verdict, Verdict{VerdictKind::kGoto, "chain"});
        REQUIRE(m.record_size() == sizeof(ElementMap::NarrowRecord));
        require_same(m, oracle);
    }
    SECTION("backends") {
        fill(backend_key, backend_value);
        REQUIRE(m.record_size() == 20);
        require_same(m, oracle);
        REQUIRE(m.find(pair()) == m.end());
        const ElementKey v6_key{v6(3), {}, 6, 80, 0};
        const Verdict v6_value = backend_value();
        m.emplace(v6_key, v6_value);
        oracle.emplace(v6_key, v6_value);
        REQUIRE(m.record_size() == sizeof(ElementMap::WideRecord));
        require_same(m, oracle);
    }
    SECTION("an emptied map takes the shape of its next first element") {
        const ElementKey k = pair();
        m.emplace(k, Verdict{});
        REQUIRE(m.record_size() == 8);
        m.insert_or_assign(k, Verdict{VerdictKind::kAccept});  // moves up, then empties and refills
        REQUIRE(m.at(k) == Verdict{VerdictKind::kAccept});
        m.erase(k);
        m.emplace(backend_key(), backend_value());
        REQUIRE(m.record_size() == 20);
    }
}
