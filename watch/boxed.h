// Boxed<T>: an optional value held on the heap, for fields that are usually
// absent (8 B when absent, against std::optional's sizeof(T) + 1). A value
// type: copies are deep and == compares the values (absent equals absent).
// Not thread-safe for writes.
#pragma once

#include <memory>
#include <optional>
#include <utility>

namespace sb::watch {

template <typename T>
class Boxed {
  public:
    Boxed() = default;
    Boxed(std::nullopt_t) {}  // NOLINT: implicit, as std::optional's
    Boxed(T value) : value_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit
    Boxed(const Boxed& other) : value_(other ? std::make_unique<T>(*other) : nullptr) {}
    Boxed(Boxed&&) noexcept = default;
    Boxed& operator=(const Boxed& other) {
        if (this != &other) value_ = other ? std::make_unique<T>(*other) : nullptr;
        return *this;
    }
    Boxed& operator=(Boxed&&) noexcept = default;

    bool has_value() const { return value_ != nullptr; }
    explicit operator bool() const { return has_value(); }
    const T& operator*() const { return *value_; }
    T& operator*() { return *value_; }
    const T* operator->() const { return value_.get(); }
    T* operator->() { return value_.get(); }
    void reset() { value_.reset(); }

    friend bool operator==(const Boxed& a, const Boxed& b) {
        return a.has_value() == b.has_value() && (!a || *a == *b);
    }

  private:
    std::unique_ptr<T> value_;
};

}  // namespace sb::watch
