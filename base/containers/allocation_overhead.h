// What the allocator adds to each block it hands out, for the caches that
// count their bytes (dns/forward/cache.h, dns/serve/render_cache.h): glibc's 8-byte
// header, rounded up to its 16-byte alignment (other allocators differ, so
// the byte counts are estimates of the heap).
#pragma once

#include <cstddef>

namespace sb {

inline constexpr size_t kAllocationOverhead = 16;

}  // namespace sb
