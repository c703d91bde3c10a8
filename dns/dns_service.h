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
#include "dns/dns_options.h"
#include "dns/zone/programmed.h"
#include "watch/store.h"

namespace sb::dns {

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
    // (dns/zone/programmed.h): the daemon calls it before a sync with what the
    // kernel keeps whatever the sync does (names go before their rules),
    // and after an accepted sync with what the sync programmed. When it
    // returns, the published zone reflects the report. The first call,
    // after the first sync attempt, releases the zone (held back until then
    // when publish_after_programming is set). Any thread. Taken by value and
    // freed before the zone is rebuilt: the first report names every
    // Service (4-6 MB at 50k), which would otherwise live through that build.
    void report_programmed(ProgrammedChanges changes);

    // Writes the published zone to the warm state's file now, when it is a
    // synced zone not written yet (nothing without a state file). For a
    // process about to hand over or stop. Any thread.
    Status persist_state();

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
