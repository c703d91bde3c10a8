#include "dns/serve/server_stats.h"

#include "dns/wire/wire.h"

namespace sb::dns {

size_t ServerStats::type_index(uint16_t qtype) {
    switch (qtype) {
        case type::kA:
            return 0;
        case type::kAAAA:
            return 1;
        case type::kSRV:
            return 2;
        case type::kPTR:
            return 3;
        case type::kTXT:
            return 4;
        case type::kSOA:
            return 5;
        case type::kNS:
            return 6;
        case type::kCNAME:
            return 7;
        case type::kANY:
            return 8;
        case type::kMX:
            return 9;
        default:
            return 10;
    }
}

uint16_t ServerStats::type_at(size_t index) {
    static constexpr uint16_t kTypeOfIndex[kTypes] = {
        type::kA,  type::kAAAA,  type::kSRV, type::kPTR, type::kTXT, type::kSOA,
        type::kNS, type::kCNAME, type::kANY, type::kMX,  0};
    return kTypeOfIndex[index];
}

void ServerStats::Histogram::record(double seconds, uint64_t n, bool shared) {
    if (n == 0) return;
    size_t bucket = 0;
    while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
    if (shared) {
        buckets[bucket].fetch_add(n, std::memory_order_relaxed);
        sum.fetch_add(seconds * static_cast<double>(n), std::memory_order_relaxed);
        return;
    }
    // Single writer: no locked instruction on the hot path.
    bump_single_writer(buckets[bucket], n);
    sum.store(sum.load(std::memory_order_relaxed) + seconds * static_cast<double>(n),
              std::memory_order_relaxed);
}

void ServerStats::SizeHistogram::record(size_t bytes, bool shared) {
    size_t bucket = 0;
    while (bucket < kSizeBuckets.size() && static_cast<double>(bytes) > kSizeBuckets[bucket]) {
        ++bucket;
    }
    if (shared) {
        buckets[bucket].fetch_add(1, std::memory_order_relaxed);
        sum.fetch_add(bytes, std::memory_order_relaxed);
        return;
    }
    // Single writer: no locked instruction on the hot path.
    bump_single_writer(buckets[bucket]);
    bump_single_writer(sum, bytes);
}

}  // namespace sb::dns
