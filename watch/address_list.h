// AddressList: an endpoint's addresses, with room for one inline.
//
// The API allows up to 100 addresses per EndpointSlice endpoint, but an
// endpoint has one in practice (kube-proxy uses only the first), and a large
// cluster holds 100k endpoints. A std::vector costs 24 B plus a heap block
// (32 B with malloc's header) per endpoint; this list holds one address
// inline (32 B, no allocation) and moves to the heap only for a second one.
// A value type: copies are deep. Not thread-safe for writes (like vector).
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>

#include "base/ip.h"

namespace sb::watch {

class AddressList {
  public:
    using value_type = IpAddress;
    using const_iterator = const IpAddress*;
    using iterator = const_iterator;

    AddressList() = default;
    AddressList(std::initializer_list<IpAddress> addresses) {
        for (const auto& address : addresses) push_back(address);
    }
    AddressList(const AddressList& other) { *this = other; }
    AddressList(AddressList&& other) noexcept { *this = std::move(other); }
    AddressList& operator=(const AddressList& other) {
        if (this == &other) return *this;
        AddressList copy;
        for (const auto& address : other) copy.push_back(address);
        return *this = std::move(copy);
    }
    AddressList& operator=(AddressList&& other) noexcept {
        if (this == &other) return *this;
        first_ = other.first_;
        size_ = other.size_;
        heap_ = std::move(other.heap_);
        other.size_ = 0;
        return *this;
    }

    bool empty() const { return size_ == 0; }
    size_t size() const { return size_; }
    const IpAddress* begin() const { return heap_ ? heap_.get() : &first_; }
    const IpAddress* end() const { return begin() + size_; }
    const IpAddress& front() const { return *begin(); }
    const IpAddress& operator[](size_t i) const { return begin()[i]; }

    void push_back(const IpAddress& address) {
        if (size_ == 0) {
            first_ = address;
        } else {
            if (size_ == kMaxSize) throw std::length_error("AddressList: too many addresses");
            // The heap block's capacity is size_ rounded up to a power of two,
            // so it is full exactly when size_ is one (or the inline slot is).
            if (std::has_single_bit(size_)) grow(size_ * 2u);
            heap_[size_] = address;
        }
        ++size_;
    }

    friend bool operator==(const AddressList& a, const AddressList& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

  private:
    static constexpr uint16_t kMaxSize = UINT16_MAX;

    void grow(size_t capacity) {
        auto bigger = std::make_unique<IpAddress[]>(capacity);
        std::copy(begin(), end(), bigger.get());
        heap_ = std::move(bigger);
    }

    // size_ <= 1 and no heap_: the address, if any, is first_. Otherwise
    // heap_ holds all size_ addresses (first_ is then unused).
    IpAddress first_;
    uint16_t size_ = 0;
    std::unique_ptr<IpAddress[]> heap_;
};

}  // namespace sb::watch
