// ServerStats: the request counters of one serving thread (a UDP socket's
// thread, a worker's TCP event loop), summed over the threads when the
// server exports them (Server::append_metrics, dns/serve/server_metrics.cpp).
//
// Thread safety: see the struct's comment; bump_single_writer() only from
// a counter's one writer.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace sb::dns {

// Request counters, one set per serving thread (summed when exported), so
// that the serving path shares no cache line and needs no locked
// instruction: the serving thread is the only writer of the plain fields;
// forward callbacks (another thread) write the `forwarded_*` ones.
struct alignas(64) ServerStats {
    static constexpr size_t kTypes = 11;  // see type_index()
    static constexpr size_t kRcodes = 7;  // 0-5, then "other"
    // CoreDNS's request duration buckets, in seconds.
    static constexpr std::array<double, 16> kBuckets = {0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008,
                                                        0.016,   0.032,  0.064, 0.128, 0.256, 0.512,
                                                        1.024,   2.048,  4.096, 8.192};
    struct Histogram {
        std::atomic<uint64_t> buckets[kBuckets.size() + 1] = {};
        std::atomic<double> sum{0};
        // `shared`: other threads write too (atomic read-modify-write).
        void record(double seconds, uint64_t n, bool shared);
    };
    // CoreDNS's request and response size buckets, in bytes.
    static constexpr std::array<double, 14> kSizeBuckets = {
        0, 100, 200, 300, 400, 511, 1023, 2047, 4095, 8291, 16e3, 32e3, 48e3, 64e3};
    struct SizeHistogram {
        std::atomic<uint64_t> buckets[kSizeBuckets.size() + 1] = {};
        std::atomic<uint64_t> sum{0};  // bytes
        // `shared`: other threads write too (atomic read-modify-write).
        void record(size_t bytes, bool shared);
    };
    // Who wrote a reply, as CoreDNS's `plugin` label of responses_total
    // names it; forwarded replies are "forward".
    enum Answerer : size_t { kKubernetes, kCache, kServerItself, kAnswerers };
    std::atomic<uint64_t> requests[2][2][kTypes] = {};  // [udp, tcp][IPv4, IPv6 client][type]
    std::atomic<uint64_t> responses[kAnswerers][kRcodes] = {};
    std::atomic<uint64_t> forwarded_responses[kRcodes] = {};
    std::atomic<uint64_t> do_requests{0};  // queries with EDNS's DO bit set
    Histogram duration;
    Histogram forwarded_duration;
    SizeHistogram request_size[2];             // [udp, tcp]
    SizeHistogram response_size[2];            // [udp, tcp]
    SizeHistogram forwarded_response_size[2];  // [udp, tcp]
    std::atomic<uint64_t> truncated{0};
    std::atomic<uint64_t> forwarded_truncated{0};
    std::atomic<uint64_t> tcp_rejected{0};  // accepted and closed: no descriptor left
    std::atomic<uint64_t> tcp_evicted{0};   // closed for a new one over the bound
    std::atomic<uint64_t> tcp_timeouts{0};  // closed by the read or idle timeout
    std::atomic<uint64_t> dropped{0};
    std::atomic<uint64_t> render_hits{0};
    std::atomic<uint64_t> render_bytes{0};    // the thread's RenderCache::bytes()
    std::atomic<uint64_t> render_flushes{0};  // its RenderCache::flushes()
    // Replies the server-side search path made (coredns_autopath_success_total),
    // and the queries their clients did not send. Written by the serving
    // thread and forward callbacks: fetch_add.
    std::atomic<uint64_t> autopath_answers{0};
    std::atomic<uint64_t> autopath_round_trips_saved{0};

    static size_t type_index(uint16_t qtype);
    // type_index's inverse (0 for the last index, "other"): a counter's
    // `type` label.
    static uint16_t type_at(size_t index);
};

// Adds `n` to a counter that only the calling thread writes (readers may be
// anywhere): a plain load and store, no locked read-modify-write on the
// serving path.
inline void bump_single_writer(std::atomic<uint64_t>& counter, uint64_t n = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace sb::dns
