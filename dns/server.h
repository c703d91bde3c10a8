// Server: the UDP and TCP sockets of the DNS service and the worker threads
// that serve them.
//
// Every worker owns one SO_REUSEPORT UDP socket and one TCP listener per
// listen address (the kernel spreads clients over the workers), an epoll
// loop, and a cache of rendered replies for zone answers (keyed by the
// lower-cased question, the EDNS state and the size limit; flushed when a
// new zone is published). Forwarded queries complete on the forwarder's
// thread and reach their worker through its inbox.
//
// Thread safety: start() and stop() for one controlling thread; the zone
// holder and metrics may be used from any thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dns/cache.h"
#include "dns/forward.h"
#include "dns/resolver.h"
#include "dns/zone.h"

namespace sb::dns {

// The published zone: writers replace it whole, readers take a reference.
class ZoneHolder {
  public:
    void publish(std::shared_ptr<const Zone> zone) {
        {
            std::lock_guard lock(mutex_);
            zone_ = std::move(zone);
        }
        version_.fetch_add(1, std::memory_order_release);
    }
    std::shared_ptr<const Zone> get() const {
        std::lock_guard lock(mutex_);
        return zone_;
    }
    // Changes with every publish: workers re-read the zone only then.
    uint64_t version() const { return version_.load(std::memory_order_acquire); }

  private:
    mutable std::mutex mutex_;
    std::shared_ptr<const Zone> zone_;
    std::atomic<uint64_t> version_{0};
};

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
    std::atomic<uint64_t> requests[2][kTypes] = {};  // [udp, tcp][type]
    std::atomic<uint64_t> responses[kRcodes] = {};
    std::atomic<uint64_t> forwarded_responses[kRcodes] = {};
    Histogram duration;
    Histogram forwarded_duration;
    std::atomic<uint64_t> truncated{0};
    std::atomic<uint64_t> forwarded_truncated{0};
    std::atomic<uint64_t> tcp_rejected{0};
    std::atomic<uint64_t> dropped{0};
    std::atomic<uint64_t> render_hits{0};

    static size_t type_index(uint16_t qtype);
};

struct ServerOptions {
    std::vector<HostPort> listen;
    unsigned workers = 1;
    std::chrono::seconds tcp_idle_timeout{10};
    size_t max_tcp_connections = 1024;  // over all workers
};

class Server {
  public:
    // `forwarder` and `cache` may be null (no upstreams: other zones REFUSED).
    Server(ServerOptions options, const ZoneHolder& zones, Forwarder* forwarder, Cache* cache);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds every socket (error names the address), then starts the workers.
    Status start();
    void stop();  // idempotent
    std::vector<HostPort> bound() const { return bound_; }
    void append_metrics(metrics::TextWriter& out) const;

    class Worker;

  private:
    ServerOptions options_;
    const ZoneHolder& zones_;
    Forwarder* forwarder_;
    Cache* cache_;
    std::vector<HostPort> bound_;
    std::vector<std::unique_ptr<Worker>> workers_;
    bool stopped_ = false;
};

}  // namespace sb::dns
