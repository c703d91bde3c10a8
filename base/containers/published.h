// Published<T>: an immutable object that writers replace whole and readers
// take a reference to (the zone, the hosts table), with a version that
// changes on every publish so that a reader re-reads only then.
//
// Thread safety: every method from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace sb {

template <typename T>
class Published {
  public:
    void publish(std::shared_ptr<const T> value) {
        {
            std::lock_guard lock(mutex_);
            value_ = std::move(value);
        }
        version_.fetch_add(1, std::memory_order_release);
    }
    std::shared_ptr<const T> get() const {
        std::lock_guard lock(mutex_);
        return value_;
    }
    uint64_t version() const { return version_.load(std::memory_order_acquire); }

  private:
    mutable std::mutex mutex_;
    std::shared_ptr<const T> value_;
    std::atomic<uint64_t> version_{0};
};

}  // namespace sb
