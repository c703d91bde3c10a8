// The UDP conntrack reconciler (kube-proxy's pkg/proxy/conntrack
// CleanStaleEntries), over the ConntrackTable interface below (the kernel:
// libnetfilter_conntrack, no `conntrack` binary).
// UDP has no teardown, so a client keeps sending to a removed endpoint (or
// keeps hitting the reject recorded before a service had endpoints) until
// its conntrack entry expires. After every sync, full ones included, both
// backends compare the kernel's UDP flows with the WHOLE plan, not with the
// difference to a previous plan: the first sync after a start, a periodic
// resync and a retry have no previous plan, and an endpoint removed while
// the daemon was down or during a full resync must lose its flows too.
// Nothing else in conntrack is touched. docs/nftables.md#udp-conntrack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/plan.h"

namespace sb::rules {

// One UDP flow as conntrack holds it: where the client sent it (original
// destination) and where the reply comes from (reply source: the endpoint
// after DNAT, or the service address itself when nothing DNATed it). The
// rest identifies the entry for a deletion, as the kernel matches it: the
// original tuple, the zone and conntrack's id of the entry (so a deletion
// cannot hit a newer flow with the same addresses).
struct UdpFlow {
    IpAddress orig_dst;
    uint16_t orig_dport = 0;
    IpAddress reply_src;
    uint16_t reply_sport = 0;
    IpAddress orig_src;
    uint16_t orig_sport = 0;
    uint16_t zone = 0;
    std::optional<uint32_t> id;  // absent: any entry with that tuple

    bool operator==(const UdpFlow&) const = default;
};

// What UDP flows may point at, from a whole Plan: for every UDP service port
// with at least one endpoint, its addresses (cluster IPs, external IPs,
// load-balancer IPs) with its port, and its NodePort, each mapped to the
// endpoints (ip and port, cluster and local ones) that serve it. A port
// without endpoints is left out: its traffic is refused, nothing to clean.
// Pure; immutable once built, so const members are thread-safe.
class UdpServiceTargets {
  public:
    explicit UdpServiceTargets(const Plan& plan);

    // A flow to a service address:port or to a NodePort (any address) whose
    // reply does not come from one of that port's endpoints: it was DNATed to
    // a removed endpoint, or recorded before the port had endpoints.
    bool stale(const UdpFlow& flow) const;
    // Whether some service port of `family` (by its addresses) is tracked;
    // a NodePort counts for both families.
    bool tracks(IpFamily family) const;

  private:
    using EndpointSet = std::set<std::pair<IpAddress, uint16_t>>;
    std::map<std::pair<IpAddress, uint16_t>, EndpointSet> by_address_;
    std::map<uint16_t, EndpointSet> by_node_port_;
};

// The outcome of one family's reconcile.
struct ConntrackReconcile {
    IpFamily family = IpFamily::kV4;
    bool ok = true;       // false: the dump (or a delete) failed; the next sync retries
    bool dumped = false;  // a dump was made (false: nothing of this family is tracked)
    size_t deleted = 0;
    double seconds = 0;
    std::string error;  // when !ok, one line
};

// The kernel's conntrack table as the reconciler uses it: the UDP flows of
// one family, and deletions. The real one is libnetfilter_conntrack
// (rules/conntrack_kernel.h); tests/unit/fake_conntrack.h holds a scripted
// table and records deletions. Not thread-safe; one caller at a time.
class ConntrackTable {
  public:
    virtual ~ConntrackTable() = default;
    // Appends `family`'s UDP flows to `out`. On failure `out` keeps the
    // flows read before it.
    virtual Status dump_udp(IpFamily family, std::vector<UdpFlow>& out) = 0;
    // Deletes each of `flows` (all of `family`), in order; one Status per
    // flow. A flow that is gone already fails with ENOENT (errno_value).
    virtual std::vector<Status> remove(IpFamily family, const std::vector<UdpFlow>& flows) = 0;
};

// Dumps the table once per family that has tracked service ports and
// deletes every stale flow; the flows found before a failed dump are
// deleted all the same. A flow that expired meanwhile (ENOENT) is not an
// error. Returns one result per family, IPv4 first; a failed one is retried
// by the next call (the whole plan is compared every time).
std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan, ConntrackTable& table);
// The same against the kernel's table, opened for this call.
std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan);

}  // namespace sb::rules
