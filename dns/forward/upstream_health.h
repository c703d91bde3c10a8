// CoreDNS's health checking of forward upstreams (plugin/pkg/proxy/health.go
// and plugin/pkg/up): a failed exchange starts probing its upstream with
// `. IN NS` (recursion desired) every interval until one probe gets any
// reply; each failed probe counts one fail, a reply resets them. An
// upstream with more than max_fails fails is down. max_fails 0 turns it off:
// never probed, never down. docs/dns.md#forwarding.
//
// Probes run one at a time, each bounded by `probe_timeout` (CoreDNS's 1 s),
// over TLS for tls:// upstreams, TCP for force_tcp sets, else UDP, as tasks
// (base/threads/background.h) of a Background of their own rather than the process's shared one: a
// probe blocks on its socket, and a set of dead upstreams would hold the shared thread's reloads
// and retries back by a probe timeout each (docs/foundations.md, "Background work").
//
// Thread safety: exchange_failed() and down() may be called from any thread;
// start() and stop() from one controlling thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/ip.h"
#include "base/threads/background.h"
#include "dns/forward/forward_metrics.h"
#include "dns/forward/secure_random.h"
#include "dns/forward/tls_client.h"

namespace sb::dns {

class UpstreamHealth {
  public:
    struct Target {
        HostPort address;
        bool tcp = false;
        const TlsClient* tls = nullptr;  // probed over TLS; owned by the set's options
        std::string tls_name;            // the name its certificate must carry
        std::optional<IpAddress> source;
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
    void stop();  // idempotent; waits for a probe under way

    // An exchange with `upstream` failed: probe it now unless it is being
    // probed already (CoreDNS's Proxy.Healthcheck).
    void exchange_failed(size_t upstream);
    // More than max_fails failed probes since its last reply.
    bool down(size_t upstream) const;

  private:
    struct State {
        std::atomic<uint32_t> fails{0};
        bool probing = false;     // guarded by mutex_
        Background::Task probes;  // guarded by mutex_; until a probe gets a reply
    };

    // One probe of `upstream` and its verdict; the delay to the next probe
    // while it gets no reply.
    Background::Next probe_once(size_t upstream);
    bool probe(const Target& target);

    const std::vector<Target> targets_;
    ForwardMetrics& metrics_;
    const std::chrono::milliseconds probe_timeout_;
    std::unique_ptr<State[]> states_;
    std::mutex mutex_;                        // guards each State's probing and probes, stopping_
    bool stopping_ = false;                   // set once by stop()
    std::optional<Background> probe_thread_;  // from start(), when any target is checked
    SecureRandom random_;                     // the probe thread's only
};

}  // namespace sb::dns
