// SharedArray<T>: an array of T in one heap block (a reference count, the
// size, the elements), shared by its copies: copying one copies a pointer
// and counts a reference. An empty array holds no block.
//
// The Plan's endpoint lists are these (rules/plan.h): one block per list
// instead of a vector's header and buffer, and two lists with the same
// endpoints (a service port's cluster and local lists when every endpoint
// is on this node) hold one block (docs/planner.md, "Shared entries").
//
// Reading behaves as a const std::vector<T>: contiguous, `const T*`
// iterators, operator[], front()/back(), a std::span. Writing (operator[]
// of a non-const array, push_back, pop_back, erase, clear) first copies the
// block when another array shares it, so an array never changes under
// another; every write but operator[] makes a new block of the new size
// (O(n): arrays are built whole, from a vector or a list, and written in
// tests). A reference from a write stays valid until the next write.
//
// Thread safety: as a std::shared_ptr: const access from any thread while
// nobody writes that array; copies may be written by other threads (a
// shared block is copied before a write, never changed).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace sb {

template <typename T>
class SharedArray {
    static_assert(std::is_nothrow_copy_constructible_v<T> &&
                      std::is_nothrow_move_constructible_v<T>,
                  "a block is filled without a way back");

  public:
    using value_type = T;
    using const_iterator = const T*;
    using iterator = const T*;
    using size_type = size_t;

    SharedArray() = default;
    SharedArray(std::initializer_list<T> items)  // NOLINT: implicit, as a vector's
        : block_(make(items.size(),
                      [&](T* out) { std::uninitialized_copy(items.begin(), items.end(), out); })) {}
    SharedArray(const std::vector<T>& items)  // NOLINT: implicit, as a vector's copy
        : block_(make(items.size(),
                      [&](T* out) { std::uninitialized_copy(items.begin(), items.end(), out); })) {}
    SharedArray(std::vector<T>&& items)  // NOLINT: implicit, as a vector's move
        : block_(make(items.size(),
                      [&](T* out) { std::uninitialized_move(items.begin(), items.end(), out); })) {}
    SharedArray(const SharedArray& other) : block_(other.block_) { hold(); }
    SharedArray(SharedArray&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
    SharedArray& operator=(const SharedArray& other) {
        SharedArray copy(other);
        swap(copy);
        return *this;
    }
    SharedArray& operator=(SharedArray&& other) noexcept {
        SharedArray moved(std::move(other));
        swap(moved);
        return *this;
    }
    ~SharedArray() { release(block_); }
    void swap(SharedArray& other) noexcept { std::swap(block_, other.block_); }

    size_t size() const { return block_ ? block_->size : 0; }
    bool empty() const { return size() == 0; }
    const T* data() const { return block_ ? block_->items() : nullptr; }
    const T* begin() const { return data(); }
    const T* end() const { return data() + size(); }
    const T& operator[](size_t i) const { return data()[i]; }
    const T& front() const { return data()[0]; }
    const T& back() const { return data()[size() - 1]; }
    const T& at(size_t i) const {
        if (i >= size()) throw std::out_of_range("SharedArray::at");
        return data()[i];
    }
    operator std::span<const T>() const { return {data(), size()}; }  // NOLINT: implicit

    // Whether both hold the same block (equal, without comparing elements).
    bool shares(const SharedArray& other) const { return block_ && block_ == other.block_; }

    bool operator==(const SharedArray& other) const {
        return block_ == other.block_ || std::equal(begin(), end(), other.begin(), other.end());
    }

    // Writes. Precondition for operator[], pop_back and erase: in range.
    T& operator[](size_t i) {
        if (block_->refs.load(std::memory_order_acquire) != 1) {
            *this = SharedArray(std::vector<T>(begin(), end()));
        }
        return block_->items()[i];
    }
    void push_back(const T& item) {
        std::vector<T> items(begin(), end());
        items.push_back(item);
        *this = SharedArray(std::move(items));
    }
    void pop_back() { erase(end() - 1); }
    void erase(const T* position) {
        std::vector<T> items(begin(), position);
        items.insert(items.end(), position + 1, end());
        *this = SharedArray(std::move(items));
    }
    void clear() { *this = SharedArray(); }

  private:
    struct alignas(std::max(alignof(T), alignof(std::atomic<uint32_t>))) Block {
        std::atomic<uint32_t> refs;
        uint32_t size;
        T* items() { return reinterpret_cast<T*>(this + 1); }
    };

    // A block of `size` elements that fill(items) constructs; none for 0.
    template <typename Fill>
    static Block* make(size_t size, Fill fill) {
        if (size == 0) return nullptr;
        void* raw = ::operator new(sizeof(Block) + size * sizeof(T));
        Block* block = new (raw) Block{{1}, static_cast<uint32_t>(size)};
        fill(block->items());
        return block;
    }
    void hold() {
        if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    static void release(Block* block) {
        if (!block || block->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        std::destroy_n(block->items(), block->size);
        block->~Block();
        ::operator delete(block);
    }

    Block* block_ = nullptr;
};

}  // namespace sb
