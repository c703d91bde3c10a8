// ShardedMap: a hash map whose copies share structure, shard by shard.
//
// The keys are spread over a fixed number of shards by hash; each shard is
// an ordinary unordered_map behind a shared pointer, and the shard pointers
// are grouped in blocks of kBlockShards, each block an array behind a
// shared pointer too (CowShards below). Copying the map copies the block
// pointers only (shards / kBlockShards of them); the first write to a shard
// copies its block if another map still holds that block (kBlockShards
// pointer copies) and then the shard if another block still holds it
// (copy-on-write at both levels). So a Zone derived from the previous one
// pays one pointer copy per block (256 for its 8192 shards) plus the blocks
// and shards its change touches, instead of one pointer copy (an atomic
// increment on a separate control block) per shard, and dropping a zone as
// few decrements. A lookup stays one hash probe (watch/persistent_map.h
// would make it O(log n) string comparisons, and its one-by-one build is
// slower for a full zone).
//
// Contract: a map is a value. Writing a map never changes what a copy of it
// (taken before or after) finds or iterates; a pointer or reference into a
// map stays valid while that map lives and is not written.
//
// Thread safety: const access from several threads is safe, and so is
// writing one map while other threads read copies of it: a block or shard
// is written in place only while this map is its only holder
// (base/containers/copy_on_write.h). Copying a map while another thread writes that
// same map is a data race, as for any value.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "base/containers/copy_on_write.h"

namespace sb::dns {

// A fixed number of shards, each a `Shard` value behind a shared pointer,
// the pointers in blocks behind shared pointers too; copies share both, and
// writable() copies what another copy still holds (the contract of
// ShardedMap above, which is built on it; so is dns/zone/address_index.h).
template <typename Shard>
class CowShards {
  public:
    // Shard pointers per block. A copy costs shards / kBlockShards pointer
    // copies, a write to a block the copy still shares kBlockShards more; a
    // one-Service zone update in dns_zone_bench touches about 13 blocks over
    // the zone's five maps (8192 shards), so 32 keeps the sum near its
    // minimum (~670 pointer copies; 8192 before blocks).
    static constexpr size_t kBlockShards = 32;

    explicit CowShards(size_t shard_count)
        : shard_count_(shard_count), blocks_((shard_count + kBlockShards - 1) / kBlockShards) {}

    size_t shard_count() const { return shard_count_; }

    // Shard `i` (< shard_count()); nullptr while never written.
    const Shard* shard(size_t i) const {
        const auto& block = blocks_[i / kBlockShards];
        return block ? (*block)[i % kBlockShards].get() : nullptr;
    }

    // Shard `i`, held by this copy alone (created when absent).
    Shard& writable(size_t i) {
        Block& block = sb::own(blocks_[i / kBlockShards]);
        return sb::own(block[i % kBlockShards]);
    }

    // Calls f(shard) for every shard ever written, in index order.
    template <typename F>
    void for_each_shard(F&& f) const {
        for (const auto& block : blocks_) {
            if (!block) continue;
            for (const auto& shard : *block) {
                if (shard) f(*shard);
            }
        }
    }

    // Calls f(shard) for every shard this copy alone holds, block and all.
    template <typename F>
    void for_each_sole_shard(F&& f) {
        for (auto& block : blocks_) {
            if (!block || !sb::sole_holder(block)) continue;
            for (auto& shard : *block) {
                if (shard && sb::sole_holder(shard)) f(*shard);
            }
        }
    }

  private:
    using Block = std::array<std::shared_ptr<Shard>, kBlockShards>;

    size_t shard_count_;
    std::vector<std::shared_ptr<Block>> blocks_;
};

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class ShardedMap {
  public:
    explicit ShardedMap(size_t shard_count) : shards_(shard_count) {}

    size_t size() const { return size_; }

    // nullptr when absent. Valid while this map lives and is not written.
    const Value* find(const Key& key) const {
        const Shard* shard = shards_.shard(index(key));
        if (!shard) return nullptr;
        auto it = shard->find(key);
        return it == shard->end() ? nullptr : &it->second;
    }

    // The value of `key`, default-constructed when absent; `added` tells.
    // Valid until the next write.
    Value& writable(const Key& key, bool& added) {
        auto [it, inserted] = shards_.writable(index(key)).try_emplace(key);
        added = inserted;
        if (inserted) ++size_;
        return it->second;
    }
    void set(const Key& key, Value value) {
        bool added = false;
        writable(key, added) = std::move(value);
    }
    void erase(const Key& key) {
        size_t i = index(key);
        const Shard* shard = shards_.shard(i);
        if (!shard || !shard->count(key)) return;
        shards_.writable(i).erase(key);
        --size_;
    }

    // Calls f(key, value) for every entry, in no particular order.
    template <typename F>
    void for_each(F&& f) const {
        shards_.for_each_shard([&f](const Shard& shard) {
            for (const auto& [key, value] : shard) f(key, value);
        });
    }

  private:
    using Shard = std::unordered_map<Key, Value, Hash>;

    size_t index(const Key& key) const { return Hash{}(key) % shards_.shard_count(); }

    CowShards<Shard> shards_;
    size_t size_ = 0;
};

}  // namespace sb::dns
