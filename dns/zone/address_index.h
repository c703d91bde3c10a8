// AddressIndex: values by IP address, any number per address, in
// copy-on-write shards of packed records sorted by address.
//
// The zone keeps what names the reverse name of every ClusterIP and ready
// endpoint address: 550k addresses at 50k Services x 10 endpoints. As names
// of a ShardedMap they cost about 200 B each (a hash node, the name's
// records, the PTR target's string); here an address costs one record, its
// bytes and the value: 24 B for IPv4 with a 16-byte value, 32 B for IPv6
// (docs/dns.md, "Zone memory").
//
// The shards are CowShards (dns/zone/sharded_map.h), each a vector of
// records sorted by address (those of one address in the order added), so
// the contract is ShardedMap's: an index is a value, writing one never
// changes what a copy finds or iterates, and a write copies only the blocks
// and shards another copy still holds. A shard grows by a quarter when full
// (a copy has no spare room), and shrink_to_fit() trims every shard after a
// bulk build.
//
// Thread safety: as ShardedMap's.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/ip.h"
#include "dns/zone/sharded_map.h"

namespace sb::dns {

template <typename Value>
class AddressIndex {
  public:
    explicit AddressIndex(size_t shard_count) : v4_(shard_count), v6_(shard_count) {}

    // How many addresses hold at least one value.
    size_t address_count() const { return v4_.addresses + v6_.addresses; }

    // Adds `value` at `address`, after the values already there.
    void add(const IpAddress& address, const Value& value) {
        if (address.is_v4()) {
            v4_.add(key<4>(address), value);
        } else {
            v6_.add(key<16>(address), value);
        }
    }

    // Removes the values at `address` for which pred(value) is true.
    template <typename Pred>
    void erase_if(const IpAddress& address, Pred pred) {
        if (address.is_v4()) {
            v4_.erase_if(key<4>(address), pred);
        } else {
            v6_.erase_if(key<16>(address), pred);
        }
    }

    // Calls f(value) for every value at `address`, in the order added.
    template <typename F>
    void for_each_at(const IpAddress& address, F&& f) const {
        if (address.is_v4()) {
            v4_.for_each_at(key<4>(address), f);
        } else {
            v6_.for_each_at(key<16>(address), f);
        }
    }

    // Calls f(address, values) for every address holding values, in no
    // particular order; `values` is a std::vector<Value>, valid during the call.
    template <typename F>
    void for_each_address(F&& f) const {
        v4_.for_each_address(IpFamily::kV4, f);
        v6_.for_each_address(IpFamily::kV6, f);
    }

    // The bytes an address's value takes in a shard (without spare room).
    static constexpr size_t record_size(IpFamily family) {
        return family == IpFamily::kV4 ? sizeof(Record<4>) : sizeof(Record<16>);
    }

    // Trims the shards this index alone holds to their size.
    void shrink_to_fit() {
        v4_.shards.for_each_sole_shard([](auto& shard) { shard.shrink_to_fit(); });
        v6_.shards.for_each_sole_shard([](auto& shard) { shard.shrink_to_fit(); });
    }

  private:
    template <size_t N>
    using Key = std::array<uint8_t, N>;

    template <size_t N>
    static Key<N> key(const IpAddress& address) {
        Key<N> bytes;
        std::memcpy(bytes.data(), address.bytes(), N);
        return bytes;
    }

    template <size_t N>
    struct Record {
        Key<N> key;
        Value value;
    };

    template <size_t N>
    struct Table {
        using Shard = std::vector<Record<N>>;

        explicit Table(size_t shard_count) : shards(shard_count) {}

        size_t index(const Key<N>& key) const {
            uint64_t hash = 14695981039346656037ull;  // FNV-1a
            for (uint8_t byte : key) {
                hash ^= byte;
                hash *= 1099511628211ull;
            }
            return static_cast<size_t>(hash % shards.shard_count());
        }

        // The records of `key` in `shard` (a Shard, const or not).
        template <typename S>
        static auto range(S& shard, const Key<N>& key) {
            return std::equal_range(shard.begin(), shard.end(), key, Less{});
        }

        void add(const Key<N>& key, const Value& value) {
            Shard& shard = shards.writable(index(key));
            auto at = std::upper_bound(shard.begin(), shard.end(), key, Less{});
            if (at == shard.begin() || (at - 1)->key != key) ++addresses;
            const auto offset = at - shard.begin();
            if (shard.size() == shard.capacity())
                shard.reserve(shard.size() + shard.size() / 4 + 1);
            shard.insert(shard.begin() + offset, Record<N>{key, value});
        }

        template <typename Pred>
        void erase_if(const Key<N>& key, Pred& pred) {
            const size_t i = index(key);
            const Shard* seen = shards.shard(i);
            if (!seen) return;
            auto [first, last] = range(*seen, key);
            if (std::none_of(first, last, [&pred](const Record<N>& r) { return pred(r.value); })) {
                return;
            }
            Shard& shard = shards.writable(i);
            auto [begin, end] = range(shard, key);
            auto kept =
                std::remove_if(begin, end, [&pred](const Record<N>& r) { return pred(r.value); });
            if (kept == begin) --addresses;
            shard.erase(kept, end);
        }

        template <typename F>
        void for_each_at(const Key<N>& key, F& f) const {
            const Shard* shard = shards.shard(index(key));
            if (!shard) return;
            auto [first, last] = range(*shard, key);
            for (auto it = first; it != last; ++it) f(it->value);
        }

        template <typename F>
        void for_each_address(IpFamily family, F& f) const {
            std::vector<Value> values;
            shards.for_each_shard([&](const Shard& shard) {
                for (auto it = shard.begin(); it != shard.end();) {
                    values.clear();
                    const Key<N>& key = it->key;
                    for (; it != shard.end() && it->key == key; ++it) values.push_back(it->value);
                    f(IpAddress::from_bytes(family, key.data()), values);
                }
            });
        }

        struct Less {
            bool operator()(const Record<N>& r, const Key<N>& key) const { return r.key < key; }
            bool operator()(const Key<N>& key, const Record<N>& r) const { return key < r.key; }
        };

        CowShards<Shard> shards;
        size_t addresses = 0;
    };

    Table<4> v4_;
    Table<16> v6_;
};

}  // namespace sb::dns
