#include "base/threads/panic_guard.h"

#include <atomic>
#include <bit>

#include "base/log.h"

namespace sb {

namespace {

std::atomic<uint64_t> g_panics{0};

}  // namespace

uint64_t panics_total() {
    return g_panics.load(std::memory_order_relaxed);
}

void record_panic(std::string_view where, const char* what) noexcept {
    const uint64_t count = g_panics.fetch_add(1, std::memory_order_relaxed) + 1;
    if (!std::has_single_bit(count)) return;
    try {
        log::error("{}: caught exception ({}); the thread goes on serving ({} so far)", where,
                   what ? what : "not a std::exception", count);
    } catch (...) {
        // Logging failed (out of memory): the count above still tells.
    }
}

}  // namespace sb
