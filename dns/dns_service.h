// DnsService: the cluster DNS server switchboard runs when --dns-listen is set.
//
// Answers the cluster zone (--cluster-domain) authoritatively from the Store's
// snapshots and forwards every other name to the upstreams, with a cache.
// The zone is an immutable index rebuilt on a background thread after Store
// changes (bursts coalesced) and swapped atomically, so a query never waits
// for a rebuild; the forwarder, cache and query log are one QueryEngine,
// swapped the same way by reconfigure() (a Corefile reload). See docs/dns.md.
//
// Thread safety: start() and stop() are for one controlling thread; the
// other methods may be called from any thread at any time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "dns/cache_set.h"
#include "dns/forward.h"
#include "dns/hosts.h"
#include "dns/programmed.h"
#include "dns/query_log.h"
#include "dns/resolver_policy.h"
#include "dns/rrl.h"
#include "dns/tcp_stream.h"
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
    ForwardSetOptions forward;        // the default upstreams' (a Corefile's `forward .`)
    // Stub domains (the Corefile's other server blocks): their names go to
    // their own upstreams, longest zone first. Zones outside cluster_domain.
    std::vector<StubZone> stubs;
    // Set by a Corefile: its server blocks and their `cache`s. Unset: one
    // cache for every forwarded name (CacheSettings::flags_default()).
    std::optional<std::vector<CacheBlock>> caches;
    unsigned workers = 0;  // 0: one per core
    // Where the default upstreams come from when `upstreams` is empty.
    std::string resolv_conf = "/etc/resolv.conf";
    // Set by a Corefile (corefile_options.cpp); the defaults are the flags'
    // behaviour. kubernetes: reverse zones and fallthrough,
    // endpoint_pod_names, noendpoints (endpoints = false).
    ClusterPolicy cluster;
    bool endpoint_pod_names = false;
    bool endpoints = true;
    std::optional<HostsOptions> hosts;  // the hosts plugin
    AnswerShuffle shuffle = AnswerShuffle::kZoneAnswers;
    // The Corefile's `log` and `errors` (no block without a Corefile: nothing logged).
    QueryLogConfig query_log;
    // DNS over TCP (ServerOptions'); a Corefile's `timeouts` read and idle.
    std::chrono::milliseconds tcp_read_timeout = kTcpReadTimeout;
    std::chrono::milliseconds tcp_idle_timeout = kTcpIdleTimeout;
    // This node's name (--hostname-override, NODE_NAME, else the host
    // name): the Pods whose queries the server-side search path knows.
    // Read at start only.
    std::string node_name;
    // `autopath @kubernetes`, --dns-autopath: the server walks a Pod's
    // search path itself (docs/dns.md, "Search path on the server").
    bool autopath = false;
    // --dns-rrl, --dns-rrl-slip, --dns-rrl-table-size: rate 0 is off. Read
    // at start only (a Corefile reload keeps the limiter).
    RrlSettings rrl;
    // Set by the daemon, whose proxy programs this node: a Service it
    // programs is published once report_programmed() says its rules are in
    // (docs/dns.md, "Publish after programming"). --dns-local-address's
    // ClusterIPs get no rules and wait for none.
    bool publish_after_programming = false;
    std::vector<IpAddress> local_dns_addresses;
};

// --dns-upstream: comma-separated ADDR[:PORT], IPv6 as [ADDR]:PORT, port 53 when omitted.
// The error names the bad entry; the caller prefixes the flag.
Result<std::vector<HostPort>> parse_upstreams(std::string_view text);
Result<PodRecords> parse_pod_records(std::string_view text);  // disabled|insecure|verified

class DnsService {
  public:
    // Serves UDP+TCP on every listen address from the Store's snapshots (zone
    // rebuilt off the serving path after Store changes). A listener that
    // cannot bind does not fail start(): it is retried (see Server and
    // serving()). Error for a bad --cluster-domain, no listen address, or
    // sockets/threads that cannot be set up. The Store must outlive the service.
    static Result<std::unique_ptr<DnsService>> start(DnsOptions options, watch::Store& store);
    ~DnsService();
    DnsService(const DnsService&) = delete;
    DnsService& operator=(const DnsService&) = delete;

    void stop();  // idempotent

    // Serves `next` from now on (a Corefile reload): the zone is rebuilt with
    // its domain, ttl and pods and published, then a new forwarder, cache and
    // query log replace the old ones as one unit. No query is dropped or
    // fails: a query takes the zone and engine published when it arrives,
    // and forwards in flight finish on the old engine, whose forwarder is
    // stopped once they are done. The listen addresses and workers are kept
    // (a warning says they need a restart). Blocks until the old engine is
    // stopped (at most ~10 s). On error (a bad cluster domain, a forwarder
    // that cannot start) nothing changed. Any thread; calls are serialised.
    Status reconfigure(DnsOptions next);

    // What the kernel serves now of the Services whose state changed
    // (dns/programmed.h): the daemon calls it before a sync with what the
    // kernel keeps whatever the sync does (names go before their rules),
    // and after an accepted sync with what the sync programmed. When it
    // returns, the published zone reflects the report. The first call,
    // after the first sync attempt, releases the zone (held back until then
    // when publish_after_programming is set). Any thread.
    void report_programmed(const ProgrammedChanges& changes);

    void append_metrics(metrics::TextWriter& out) const;

    // The listen addresses, a port 0 replaced by the kernel's pick once made.
    std::vector<HostPort> bound() const;
    // True once every listener (each address, UDP and TCP) is bound and
    // serving: what CoreDNS's `ready` plugin reports. Any thread.
    bool serving() const;
    // One line per listener: "udp 10.0.0.1:53 serving", or "... not serving
    // (N failed binds): why". For the daemon's /debug/dns.
    std::string status_text() const;

    struct Impl;

  private:
    explicit DnsService(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::dns
