// PersistentMap: an ordered map whose copies share structure.
//
// A treap (a binary search tree by key, a heap by a priority derived from the
// key's hash) whose nodes are immutable once built: a write copies only the
// nodes on the path to the key (O(log n) expected) and shares every other
// node with the map it was copied from. Copying a map copies one pointer, so
// the Store hands out a snapshot in O(1) and pays O(log n) per object it
// writes afterwards (docs/store.md). Iteration is in key order.
//
// Thread safety: a map is a value. Const access to one map from several
// threads is safe, and so is writing one map while other threads read copies
// of it (shared nodes are never modified; their reference counts are atomic).
// Writing one map object from two threads, or writing it while another thread
// reads that same object, needs a lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace sb::watch {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class PersistentMap {
  public:
    using value_type = std::pair<const Key, Value>;

  private:
    struct Node;
    using NodePtr = std::shared_ptr<const Node>;
    struct Node {
        std::shared_ptr<const value_type> item;
        NodePtr left;
        NodePtr right;
        uint64_t priority = 0;
    };

  public:
    // In-order iteration. An iterator reads the map it came from: it is valid
    // while that map object lives and is not written.
    class const_iterator {
      public:
        using value_type = PersistentMap::value_type;
        using reference = const value_type&;
        using pointer = const value_type*;
        using difference_type = std::ptrdiff_t;
        using iterator_category = std::forward_iterator_tag;

        const_iterator() = default;
        reference operator*() const { return *path_.back()->item; }
        pointer operator->() const { return path_.back()->item.get(); }
        const_iterator& operator++() {
            const Node* node = path_.back();
            path_.pop_back();
            descend_left(node->right.get());
            return *this;
        }
        const_iterator operator++(int) {
            const_iterator before = *this;
            ++*this;
            return before;
        }
        bool operator==(const const_iterator& other) const {
            if (path_.empty() || other.path_.empty()) return path_.empty() == other.path_.empty();
            return path_.back() == other.path_.back();
        }

      private:
        friend class PersistentMap;
        explicit const_iterator(const Node* root) { descend_left(root); }
        void descend_left(const Node* node) {
            for (; node; node = node->left.get()) path_.push_back(node);
        }
        // The nodes whose left subtree holds the current position; the last
        // one is the current node. Empty at the end.
        std::vector<const Node*> path_;
    };
    using iterator = const_iterator;

    PersistentMap() = default;

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const_iterator begin() const { return const_iterator(root_.get()); }
    const_iterator end() const { return const_iterator(); }

    // The value of `key`, nullptr when absent. Valid while this map object
    // lives and is not written (the value itself lives as long as any map
    // sharing it).
    const Value* find(const Key& key) const {
        for (const Node* node = root_.get(); node;) {
            if (key < node->item->first) {
                node = node->left.get();
            } else if (node->item->first < key) {
                node = node->right.get();
            } else {
                return &node->item->second;
            }
        }
        return nullptr;
    }
    bool contains(const Key& key) const { return find(key) != nullptr; }

    // Inserts or replaces.
    void set(const Key& key, Value value) {
        auto item = std::make_shared<const value_type>(key, std::move(value));
        bool added = false;
        root_ = insert(root_, item, priority_of(key), added);
        if (added) ++size_;
    }
    // Returns whether `key` was present.
    bool erase(const Key& key) {
        bool erased = false;
        root_ = remove(root_, key, erased);
        if (erased) --size_;
        return erased;
    }

  private:
    static uint64_t priority_of(const Key& key) {
        // splitmix64's finaliser: spreads a weak hash over all 64 bits.
        uint64_t x = static_cast<uint64_t>(Hash{}(key)) + 0x9e3779b97f4a7c15ull;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        return x ^ (x >> 31);
    }

    static NodePtr make(std::shared_ptr<const value_type> item, NodePtr left, NodePtr right,
                        uint64_t priority) {
        return std::make_shared<const Node>(
            Node{std::move(item), std::move(left), std::move(right), priority});
    }

    // The keys of `node` below `key` and above it; `key` must be absent.
    static std::pair<NodePtr, NodePtr> split(const NodePtr& node, const Key& key) {
        if (!node) return {};
        if (node->item->first < key) {
            auto [low, high] = split(node->right, key);
            return {make(node->item, node->left, std::move(low), node->priority), std::move(high)};
        }
        auto [low, high] = split(node->left, key);
        return {std::move(low), make(node->item, std::move(high), node->right, node->priority)};
    }

    // Every key of `low` is below every key of `high`.
    static NodePtr join(const NodePtr& low, const NodePtr& high) {
        if (!low) return high;
        if (!high) return low;
        if (low->priority >= high->priority) {
            return make(low->item, low->left, join(low->right, high), low->priority);
        }
        return make(high->item, join(low, high->left), high->right, high->priority);
    }

    static NodePtr insert(const NodePtr& node, const std::shared_ptr<const value_type>& item,
                          uint64_t priority, bool& added) {
        const Key& key = item->first;
        // Every node below `node` has a priority at most node->priority, and
        // a key's priority is a function of the key: a higher one means the
        // key is not in this subtree, and its node goes here.
        if (!node || priority > node->priority) {
            added = true;
            auto [low, high] = split(node, key);
            return make(item, std::move(low), std::move(high), priority);
        }
        if (key < node->item->first) {
            return make(node->item, insert(node->left, item, priority, added), node->right,
                        node->priority);
        }
        if (node->item->first < key) {
            return make(node->item, node->left, insert(node->right, item, priority, added),
                        node->priority);
        }
        return make(item, node->left, node->right, node->priority);
    }

    static NodePtr remove(const NodePtr& node, const Key& key, bool& erased) {
        if (!node) return node;
        if (key < node->item->first) {
            NodePtr left = remove(node->left, key, erased);
            return erased ? make(node->item, std::move(left), node->right, node->priority) : node;
        }
        if (node->item->first < key) {
            NodePtr right = remove(node->right, key, erased);
            return erased ? make(node->item, node->left, std::move(right), node->priority) : node;
        }
        erased = true;
        return join(node->left, node->right);
    }

    NodePtr root_;
    size_t size_ = 0;
};

}  // namespace sb::watch
