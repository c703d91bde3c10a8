// ShardedMap: a hash map whose copies share structure, shard by shard.
//
// The keys are spread over a fixed number of shards by hash; each shard is
// an ordinary unordered_map behind a shared pointer. Copying the map copies
// the shard pointers only; the first write to a shard that another map
// still holds copies that one shard (copy-on-write). So a Zone derived from
// the previous one pays for the shards its change touches, and lookups stay
// one hash probe (watch/persistent_map.h would make them O(log n) string
// comparisons, and its one-by-one build is slower for a full zone).
//
// Thread safety: a map is a value. Const access from several threads is
// safe, and so is writing one map while other threads read copies of it (a
// shard is written in place only while this map is its only holder, and no
// other thread can take a copy of a map being written without a lock).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

namespace sb::dns {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class ShardedMap {
  public:
    explicit ShardedMap(size_t shard_count) : shards_(shard_count) {}

    size_t size() const { return size_; }

    // nullptr when absent. Valid while this map lives and is not written.
    const Value* find(const Key& key) const {
        const auto& shard = shards_[index(key)];
        if (!shard) return nullptr;
        auto it = shard->find(key);
        return it == shard->end() ? nullptr : &it->second;
    }

    // The value of `key`, default-constructed when absent; `added` tells.
    // Valid until the next write.
    Value& writable(const Key& key, bool& added) {
        auto [it, inserted] = writable_shard(index(key)).try_emplace(key);
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
        if (!shards_[i] || !shards_[i]->count(key)) return;
        writable_shard(i).erase(key);
        --size_;
    }

    // Calls f(key, value) for every entry, in no particular order.
    template <typename F>
    void for_each(F&& f) const {
        for (const auto& shard : shards_) {
            if (!shard) continue;
            for (const auto& [key, value] : *shard) f(key, value);
        }
    }

  private:
    using Shard = std::unordered_map<Key, Value, Hash>;

    size_t index(const Key& key) const { return Hash{}(key) % shards_.size(); }

    Shard& writable_shard(size_t i) {
        auto& shard = shards_[i];
        if (!shard) {
            shard = std::make_shared<Shard>();
        } else if (shard.use_count() != 1) {
            shard = std::make_shared<Shard>(*shard);
        }
        return *shard;
    }

    std::vector<std::shared_ptr<Shard>> shards_;
    size_t size_ = 0;
};

}  // namespace sb::dns
