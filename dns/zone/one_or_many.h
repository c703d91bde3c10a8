// OneOrMany: a sequence that holds a single element in place and only more
// than one on the heap, with no spare capacity.
//
// The zone's names mostly carry one RRset of one rdata (a Service's A, its
// PTR, its SRV): a std::vector costs each of them an allocation (and ~16 B
// of malloc overhead) for one element. Here zero or one element takes no
// allocation, and an insert sizes the heap array to exactly what it holds
// (it reallocates when full: a sorted insert is O(n) anyway); an erase keeps
// the capacity, except that one element left goes back in place.
//
// Contract: a value type; pointers and references into it are invalidated by
// any insert or erase. Not thread-safe for writes; const access from several
// threads is safe.
#pragma once

#include <cstddef>
#include <utility>
#include <variant>
#include <vector>

namespace sb::dns {

template <typename T>
class OneOrMany {
  public:
    OneOrMany() = default;
    // Takes the elements of `items` (capacity trimmed to the size).
    explicit OneOrMany(std::vector<T>&& items) {
        if (items.size() == 1) {
            items_.template emplace<T>(std::move(items.front()));
        } else if (items.size() > 1) {
            items.shrink_to_fit();
            items_.template emplace<std::vector<T>>(std::move(items));
        }
    }

    size_t size() const { return end() - begin(); }
    bool empty() const { return std::holds_alternative<std::monostate>(items_); }
    const T* begin() const {
        if (const T* one = std::get_if<T>(&items_)) return one;
        if (const auto* many = std::get_if<std::vector<T>>(&items_)) return many->data();
        return nullptr;
    }
    const T* end() const {
        if (const T* one = std::get_if<T>(&items_)) return one + 1;
        if (const auto* many = std::get_if<std::vector<T>>(&items_)) {
            return many->data() + many->size();
        }
        return nullptr;
    }
    T* begin() { return const_cast<T*>(std::as_const(*this).begin()); }
    T* end() { return const_cast<T*>(std::as_const(*this).end()); }
    // Precondition: not empty.
    const T& front() const { return *begin(); }
    T& operator[](size_t i) { return begin()[i]; }
    const T& operator[](size_t i) const { return begin()[i]; }

    // Inserts `value` before position `i` (0 <= i <= size()).
    void insert(size_t i, T value) {
        if (empty()) {
            items_.template emplace<T>(std::move(value));
            return;
        }
        if (T* one = std::get_if<T>(&items_)) {
            std::vector<T> many;
            many.reserve(2);
            many.push_back(std::move(*one));
            many.insert(many.begin() + static_cast<std::ptrdiff_t>(i), std::move(value));
            items_ = std::move(many);
            return;
        }
        auto& many = std::get<std::vector<T>>(items_);
        if (many.size() == many.capacity()) {
            std::vector<T> grown;
            grown.reserve(many.size() + 1);
            for (auto& item : many) grown.push_back(std::move(item));
            many = std::move(grown);
        }
        many.insert(many.begin() + static_cast<std::ptrdiff_t>(i), std::move(value));
    }

    // Erases the element at position `i` (< size()).
    void erase(size_t i) {
        if (std::holds_alternative<T>(items_)) {
            items_ = std::monostate{};
            return;
        }
        auto& many = std::get<std::vector<T>>(items_);
        if (many.size() == 2) {
            T last = std::move(many[1 - i]);
            items_.template emplace<T>(std::move(last));
            return;
        }
        many.erase(many.begin() + static_cast<std::ptrdiff_t>(i));
    }

  private:
    std::variant<std::monostate, T, std::vector<T>> items_;
};

}  // namespace sb::dns
