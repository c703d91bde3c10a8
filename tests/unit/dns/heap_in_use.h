// What glibc's allocator has handed out, for the tests that compare what a
// cache charges with the heap it really takes.
//
// Under a sanitizer (the TSan tier) malloc is the sanitizer's own and
// mallinfo2() reports nothing: heap_is_visible() says whether the counts mean
// anything, and those comparisons are made only when they do (the plain unit
// tier always makes them).
#pragma once

#include <malloc.h>

#include <cstddef>
#include <memory>

namespace sb::dns::test {

inline size_t heap_in_use() {
    return mallinfo2().uordblks;
}

inline bool heap_is_visible() {
    size_t before = heap_in_use();
    auto block = std::make_unique<char[]>(1 << 16);
    block[0] = 1;
    return heap_in_use() >= before + (1 << 16);
}

}  // namespace sb::dns::test
