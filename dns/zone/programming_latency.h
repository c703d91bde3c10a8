// ProgrammingLatency: CoreDNS's coredns_kubernetes_dns_programming_duration_seconds,
// the time from an EndpointSlice's endpoints.kubernetes.io/last-change-trigger-time
// (the change in the cluster: a Pod became ready, a Service was created) to
// the publish of the first zone that contains it, by the Service's kind:
// cluster_ip, headless_with_selector, headless_without_selector.
//
// The zone builder's cycle is: take() the slices changed so far, THEN take
// the Store's snapshot, build and publish, then observe(). The order makes
// the latency honest: the Store notifies after writing, so a change recorded
// before take() is in that snapshot; one recorded after waits for the next
// build.
//
// Thread safety: record() from any thread (the Store's listener: it only
// records keys); take() and observe() from a zone rebuild (the builder's
// thread, or report_programmed()'s caller: DnsService serialises the
// observe() calls under its zone mutex); append_metrics() from any thread.
#pragma once

#include <chrono>
#include <map>
#include <mutex>

#include "base/metrics.h"
#include "watch/store.h"

namespace sb::dns {

class ProgrammingLatency {
  public:
    using time_point = std::chrono::system_clock::time_point;
    using Changed = std::map<watch::ObjectKey, watch::ObjectKey>;  // slice -> its Service

    // Trigger times before `started` are not observed: a slice changed
    // before this process ran was not waiting for it (kube-proxy's
    // trackerStartTime), and the first build would report hours.
    explicit ProgrammingLatency(time_point started);

    // The Store listener's body: the EndpointSlices in `changes`.
    void record(const std::vector<watch::Change>& changes);
    // The slices recorded since the last take().
    Changed take();
    // `published` (a zone built from `snapshot`, which was taken after
    // `changed`) went live at `now`: one observation per changed slice that
    // still exists, carries a valid trigger time not before `started`, and
    // whose Service is in the snapshot (not ExternalName, which has no
    // endpoints in DNS).
    void observe(const Changed& changed, const watch::Snapshot& snapshot, time_point now);

    // The service_kind of `service`'s slices.
    static const char* service_kind(const watch::Service& service);

    void append_metrics(metrics::TextWriter& out) const;

  private:
    const time_point started_;
    std::mutex mutex_;
    Changed changed_;  // guarded by mutex_
    // CoreDNS's buckets: 1 ms to about 17 minutes.
    metrics::Labelled<metrics::Histogram> duration_;
};

}  // namespace sb::dns
