// CorednsEndpoints: CoreDNS's HTTP serving surface, opened from the
// Corefile's `prometheus`, `health` and `ready` plugins (--dns-corefile):
// GET /metrics, /health and /ready answered as CoreDNS's plugins answer
// them (docs/corefile.md, "HTTP endpoints").
//
// The dns layer does not know HTTP; the daemon hands in what the answers
// read as Probes.
//
// Thread safety: the handlers run on the HttpServer's io thread and call
// the probes there, so the probes must be thread-safe. lameduck() blocks
// the calling thread; any thread. The HttpServer must outlive this object.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "base/metrics.h"
#include "dns/corefile/config.h"
#include "proxy/http/metrics.h"
#include "proxy/http/server.h"

namespace sb::proxy {

// Where a bind of these listeners that failed is retried.
inline constexpr std::chrono::milliseconds kCorednsBindRetryPeriod{5000};

// The listeners of every server block, each address once (CoreDNS shares
// one listener between the server blocks that name the same address).
struct CorednsEndpointsConfig {
    std::vector<dns::HttpListen> prometheus;
    std::vector<dns::HttpListen> health;
    std::vector<dns::HttpListen> ready;
    // The longest `lameduck` of the health plugins: how long DNS and
    // /health go on serving after SIGTERM.
    std::chrono::milliseconds lameduck{0};
    bool empty() const { return prometheus.empty() && health.empty() && ready.empty(); }
    bool operator==(const CorednsEndpointsConfig&) const = default;
};

CorednsEndpointsConfig coredns_endpoints_config(const dns::CorefileConfig& corefile);

// The address a HttpListen binds: "" (every address) is [::], which takes
// IPv4 too, as Go's ":PORT" does, or 0.0.0.0 when the kernel has no IPv6;
// "localhost" is 127.0.0.1, the first address Go's resolver gives.
HostPort bind_address(const dns::HttpListen& listen, bool kernel_has_ipv6);

// coredns_build_info{version,revision,goversion} = 1, as CoreDNS's metrics
// plugin writes it: switchboard's version; the revision it does not know is
// empty; goversion names the C++ toolchain (as kubernetes_build_info's
// go_version does, proxy/http/metrics.cpp).
void write_coredns_build_info(metrics::TextWriter& out, const BuildInfo& build);

class CorednsEndpoints {
  public:
    struct Probes {
        std::function<bool()> store_synced;  // the Store holds the initial state
        std::function<bool()> dns_serving;   // every DNS listener is bound
        std::function<std::string()> metrics_text;
    };

    // Serves each address of `config` on `http`; a bind that fails is logged
    // and retried every kCorednsBindRetryPeriod and stops nothing.
    CorednsEndpoints(HttpServer& http, CorednsEndpointsConfig config, Probes probes);
    ~CorednsEndpoints();  // close()s

    // Closes the listeners (a Corefile reload that changes them). Requests
    // in flight may still call the handlers: keep the object until the
    // HttpServer stops. Idempotent.
    void close();
    const CorednsEndpointsConfig& config() const { return config_; }
    CorednsEndpoints(const CorednsEndpoints&) = delete;
    CorednsEndpoints& operator=(const CorednsEndpoints&) = delete;

    // CoreDNS's ready plugin: 200 "OK" once the Store is synced
    // ("kubernetes") and every DNS listener serves ("dns"), else 503 with
    // the names of those not ready, comma-separated and sorted.
    HttpResponse ready() const;
    HttpResponse health() const;  // 200 "OK" while the process runs
    HttpResponse metrics() const;

    // Blocks for the configured lameduck (at once when none), or until
    // `cut_short` returns true (asked every 20 ms); the caller stops DNS and
    // the listeners afterwards.
    void lameduck(const std::function<bool()>& cut_short) const;

    // The bound port of the first listener serving that path (0: none or
    // not bound yet), for tests.
    uint16_t port(const std::string& path) const;

  private:
    HttpServer& http_;
    const CorednsEndpointsConfig config_;
    const Probes probes_;
    struct Listener {
        int id = 0;
        std::vector<std::string> paths;
    };
    std::vector<Listener> listeners_;
};

}  // namespace sb::proxy
