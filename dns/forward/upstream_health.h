// CoreDNS's health checking of forward upstreams (plugin/pkg/proxy/health.go
// and plugin/pkg/up): a failed exchange starts probing its upstream with
// `. IN NS` (recursion desired) every interval until one probe gets any
// reply; each failed probe counts one fail, a reply resets them. An
// upstream with more than max_fails fails is down. max_fails 0 turns it off:
// never probed, never down. docs/dns.md#forwarding.
//
// Probes run on one thread of their own, one at a time, each bounded by
// `probe_timeout` (CoreDNS's 1 s), over TCP for force_tcp sets, else UDP.
//
// Thread safety: exchange_failed() and down() may be called from any thread;
// start() and stop() from one controlling thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/ip.h"
#include "dns/forward/forward_metrics.h"
#include "dns/forward/secure_random.h"

namespace sb::dns {

class UpstreamHealth {
  public:
    struct Target {
        HostPort address;
        bool tcp = false;
        uint32_t max_fails = 0;
        std::chrono::milliseconds interval{500};
    };

    // `metrics` counts each failed probe and must outlive this object.
    UpstreamHealth(std::vector<Target> targets, ForwardMetrics& metrics,
                   std::chrono::milliseconds probe_timeout);
    ~UpstreamHealth();
    UpstreamHealth(const UpstreamHealth&) = delete;
    UpstreamHealth& operator=(const UpstreamHealth&) = delete;

    void start();
    void stop();  // idempotent

    // An exchange with `upstream` failed: probe it now unless it is being
    // probed already (CoreDNS's Proxy.Healthcheck).
    void exchange_failed(size_t upstream);
    // More than max_fails failed probes since its last reply.
    bool down(size_t upstream) const;

  private:
    struct State {
        std::atomic<uint32_t> fails{0};
        bool probing = false;  // guarded by mutex_
        std::chrono::steady_clock::time_point next_probe;
    };

    void run();
    bool probe(const Target& target);

    const std::vector<Target> targets_;
    ForwardMetrics& metrics_;
    const std::chrono::milliseconds probe_timeout_;
    std::unique_ptr<State[]> states_;
    std::mutex mutex_;  // guards each State's probing and next_probe, stopping_
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread thread_;
    SecureRandom random_;  // the probe thread's only
};

}  // namespace sb::dns
