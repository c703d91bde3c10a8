// DnsService: the cluster DNS server switchboard runs when --dns-listen is set.
//
// Answers the cluster zone (--cluster-domain) authoritatively from the Store's
// snapshots and forwards every other name to the upstreams, with a cache.
// The zone is an immutable index rebuilt on a background thread after Store
// changes (bursts coalesced) and swapped atomically, so a query never waits
// for a rebuild. See docs/dns.md.
//
// Thread safety: start() and stop() are for one controlling thread;
// append_metrics() may be called from any thread at any time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "watch/store.h"

namespace sb::dns {

// --dns-pods: which a-b-c-d.ns.pod.<zone> names answer (CoreDNS "pods" option).
enum class PodRecords { kDisabled, kInsecure, kVerified };

struct DnsOptions {
    std::vector<HostPort> listen;  // --dns-listen
    std::string cluster_domain = "cluster.local";
    uint32_t ttl = 30;                        // --dns-ttl
    PodRecords pods = PodRecords::kInsecure;  // --dns-pods
    std::vector<HostPort> upstreams;  // --dns-upstream; empty: nameservers of /etc/resolv.conf
    unsigned workers = 0;             // 0: one per core
    // Where the default upstreams come from when `upstreams` is empty.
    std::string resolv_conf = "/etc/resolv.conf";
};

// --dns-upstream: comma-separated ADDR[:PORT], IPv6 as [ADDR]:PORT, port 53 when omitted.
Result<std::vector<HostPort>> parse_upstreams(std::string_view text);
Result<PodRecords> parse_pod_records(std::string_view text);  // disabled|insecure|verified

class DnsService {
  public:
    // Binds UDP+TCP on every listen address and serves from the Store's snapshots
    // (zone rebuilt off the serving path after Store changes). Error when a bind fails.
    // The Store must outlive the service.
    static Result<std::unique_ptr<DnsService>> start(DnsOptions options, watch::Store& store);
    ~DnsService();
    DnsService(const DnsService&) = delete;
    DnsService& operator=(const DnsService&) = delete;

    void stop();  // idempotent
    void append_metrics(metrics::TextWriter& out) const;

    // The addresses actually bound (a listen port 0 is replaced by the kernel's pick).
    std::vector<HostPort> bound() const;

    struct Impl;

  private:
    explicit DnsService(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::dns
