// The UDP conntrack reconciler (kube-proxy's pkg/proxy/conntrack
// CleanStaleEntries), over the ConntrackTable interface (rules/kernel/conntrack_table.h; the
// kernel: libnetfilter_conntrack, no `conntrack` binary).
// UDP has no teardown, so a client keeps sending to a removed endpoint (or
// keeps hitting the reject recorded before a service had endpoints) until
// its conntrack entry expires. After every sync, full ones included, both
// backends compare the kernel's UDP flows with what the WHOLE plan allows,
// not with the difference to a previous plan: an endpoint removed while the
// daemon was down or during a full resync must lose its flows too. What the
// whole plan allows (UdpServiceTargets) is kept up to date from the service
// ports that changed when the reconciler knows the previous plan, and built
// anew when it does not. Nothing else in conntrack is touched.
// docs/nftables.md#udp-conntrack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/kernel/conntrack_table.h"
#include "rules/plan.h"
#include "rules/port_changes.h"

namespace sb::rules {

// What UDP flows may point at, from a whole Plan: for every UDP service port
// with at least one endpoint, its addresses (cluster IPs, external IPs,
// load-balancer IPs) with its port, and its NodePort, each mapped to the
// endpoints (ip and port, cluster and local ones) that serve it. A port
// without endpoints is left out: its traffic is refused, nothing to clean.
// Built whole from a Plan, or kept up to date port by port with add() and
// remove(): the same ports added, in any order, give the same answers.
// Not thread-safe for writes; const members from any thread while nobody
// writes.
class UdpServiceTargets {
  public:
    UdpServiceTargets() = default;
    explicit UdpServiceTargets(const Plan& plan);

    // Counts `port`'s addresses and endpoints in (nothing for a port that is
    // not UDP or has no endpoint).
    void add(const ServicePortPlan& port);
    // Takes out what add(port) counted in. Precondition: `port` (equal by
    // value) was added and not removed since.
    void remove(const ServicePortPlan& port);

    // A flow to a service address:port or to a NodePort (any address) whose
    // reply does not come from one of that port's endpoints: it was DNATed to
    // a removed endpoint, or recorded before the port had endpoints.
    bool stale(const UdpFlow& flow) const;
    // Whether some service port of `family` (by its addresses) is tracked;
    // a NodePort counts for both families.
    bool tracks(IpFamily family) const;

  private:
    // How many added ports serve each endpoint: two ports sharing an address
    // (external IPs are not unique in the API) keep the flows of either's
    // endpoints, and removing one keeps the other's. No count is zero.
    using EndpointCounts = std::map<std::pair<IpAddress, uint16_t>, size_t>;
    void count(const ServicePortPlan& port, bool in);

    std::map<std::pair<IpAddress, uint16_t>, EndpointCounts> by_address_;
    std::map<uint16_t, EndpointCounts> by_node_port_;
    size_t v4_addresses_ = 0;  // keys of by_address_ per family, for tracks()
    size_t v6_addresses_ = 0;
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

// Dumps the table once per family that `targets` tracks and deletes every
// stale flow; the flows found before a failed dump are deleted all the same.
// A flow that expired meanwhile (ENOENT) is not an error. Returns one result
// per family, IPv4 first.
std::vector<ConntrackReconcile> reconcile_udp_conntrack(const UdpServiceTargets& targets,
                                                        ConntrackTable& table);
// The same with the targets of the whole `plan`, built for this call.
std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan, ConntrackTable& table);

// What a backend runs after each sync: the reconcile above over targets it
// keeps from one call to the next. With the plan of the previous call, only
// the service ports that differ (rules/port_changes.h: the plan's change set
// when it names that plan) are taken out of and put into the targets, so a
// one-change sync costs that change and the dump; without it (the first sync,
// a full resync, a plan made by hand: revision 0) they are built from the
// whole plan. Either way a call's deletions are those of the whole-plan
// reconcile; a failed one is retried by the next call, which compares the
// whole table again. Owns its table. Not thread-safe (the backend's sync
// runner is its one caller).
class UdpConntrackReconciler {
  public:
    // Precondition: `table` is not null.
    explicit UdpConntrackReconciler(std::unique_ptr<ConntrackTable> table);

    // `previous`: the plan given to the last call, or nullptr when unknown.
    // It is used only when its revision is the one the targets were built
    // for (revisions are distinct per planned plan, rules/plan.h).
    // `changed`: changed_ports(*previous, plan) when the caller has computed
    // it already (so it is not computed twice), else nullptr.
    std::vector<ConntrackReconcile> reconcile(const Plan& plan, const Plan* previous,
                                              const std::vector<PortChange>* changed = nullptr);

  private:
    void update_targets(const Plan& plan, const Plan* previous,
                        const std::vector<PortChange>* changed);

    std::unique_ptr<ConntrackTable> table_;
    UdpServiceTargets targets_;
    uint64_t targets_revision_ = 0;  // the plan targets_ reflect; 0: none known
};

}  // namespace sb::rules
