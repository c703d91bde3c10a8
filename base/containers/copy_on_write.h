// Copy on write over std::shared_ptr: the one rule by which structures whose
// copies share parts (base/containers/shared_sequence.h, dns/zone/sharded_map.h) decide
// whether a part may be written in place.
//
// A part may be written in place only while the pointer is its only holder.
// use_count() is a relaxed load, so after seeing 1 an acquire fence orders
// the write after the reads of a holder that released the part just now (an
// acq_rel decrement on another thread). Thread safety: as for the pointer
// itself; the pointer must not be copied by another thread meanwhile.
#pragma once

#include <atomic>
#include <memory>

namespace sb {

// True when `pointer` holds its object alone, so it may be written in place.
template <typename T>
bool sole_holder(const std::shared_ptr<T>& pointer) {
    if (pointer.use_count() != 1) return false;
    std::atomic_thread_fence(std::memory_order_acquire);
    return true;
}

// `pointer` made the only holder of a value equal to the one it points at
// (a new T when null), so that writing through the result changes no copy.
template <typename T>
T& own(std::shared_ptr<T>& pointer) {
    if (!pointer) {
        pointer = std::make_shared<T>();
    } else if (!sole_holder(pointer)) {
        pointer = std::make_shared<T>(*pointer);
    }
    return *pointer;
}

}  // namespace sb
