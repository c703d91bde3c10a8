// The forwarder's per-upstream metrics with CoreDNS's names and labels, for
// dashboards of CoreDNS before 1.11 (coredns_forward_*{to}) and from 1.11 on
// (coredns_proxy_*{proxy_name="forward",to}), both written: docs/dns.md#metrics.
// `to` is the upstream as CoreDNS prints it: "IP:PORT", "[IPv6]:PORT".
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"

namespace sb::dns {

// CoreDNS's rcode label: dns.RcodeToString's name, else the number.
std::string rcode_label(uint8_t rcode);

class ForwardMetrics {
  public:
    // `upstreams`: every upstream of every set, in the forwarder's order.
    explicit ForwardMetrics(const std::vector<HostPort>& upstreams);

    // Upstream `upstream` replied with `rcode` after `seconds` (what CoreDNS
    // counts: an exchange that got a reply).
    void replied(size_t upstream, uint8_t rcode, double seconds);
    void health_check_failed(size_t upstream);
    void health_check_broken() { broken_.inc(); }
    void max_concurrent_rejected() { rejects_.inc(); }

    uint64_t health_check_failures(size_t upstream) const;
    uint64_t broken() const { return broken_.value(); }
    uint64_t rejects() const { return rejects_.value(); }

    void append(metrics::TextWriter& out) const;

  private:
    std::vector<std::string> to_;
    metrics::Labelled<metrics::Counter> requests_;
    metrics::Labelled<metrics::Counter> responses_;
    metrics::Labelled<metrics::Histogram> duration_;
    metrics::Labelled<metrics::Histogram> proxy_duration_;
    std::vector<metrics::Counter> health_failures_;  // per upstream
    metrics::Counter broken_;
    metrics::Counter rejects_;
};

}  // namespace sb::dns
