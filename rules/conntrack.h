// The UDP conntrack reconciler (kube-proxy's pkg/proxy/conntrack
// CleanStaleEntries, with kubernetes#139629 and #141371), over the
// ConntrackTable interface (rules/kernel/conntrack_table.h; the kernel:
// libnetfilter_conntrack, no `conntrack` binary).
// UDP has no teardown, so a client keeps sending to a removed endpoint (or
// keeps hitting the reject recorded before a service had endpoints) until
// its conntrack entry expires. After every sync, full ones included, the
// backends compare the kernel's UDP flows with what the WHOLE plan allows,
// not with the difference to a previous plan: an endpoint removed while the
// daemon was down or during a full resync must lose its flows too. What the
// whole plan allows (UdpServiceTargets) is kept up to date from the service
// ports that changed when the reconciler knows the previous plan, and built
// anew when it does not. A frontend the plan no longer has (its Service
// deleted) is judged by what the reconciler saw before, or, after a start,
// by what the kernel's rules DNATed before the sync. Only flows to service
// frontends are touched, and to a frontend without endpoints only flows
// something DNATed. docs/nftables.md#udp-conntrack.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/kernel/conntrack_table.h"
#include "rules/plan.h"
#include "rules/port_changes.h"

namespace sb::rules {

// UDP frontends some rules DNAT: service addresses with their port, and
// NodePorts (on any address).
struct UdpFrontends {
    std::vector<std::pair<IpAddress, uint16_t>> addresses;
    std::vector<uint16_t> node_ports;
};

// Which UDP flows are stale. From a whole Plan: every UDP service port's
// frontends (cluster IPs, external IPs and load-balancer IPs with its port,
// and its NodePort), each mapped to the serving endpoints (ip and port) of
// the ports that lead there: cluster, local and other serving ones, so a
// terminating endpoint keeps its flows while ready ones exist. Then the
// frontends no port leads to any more (retired): a port taken out, or named
// by retire(), until forget_retired() says a reconcile judged their flows.
// Built whole from a Plan, or kept up to date port by port with add() and
// remove(): the same ports added, in any order, give the same answers.
// Not thread-safe for writes; const members from any thread while nobody
// writes.
class UdpServiceTargets {
  public:
    UdpServiceTargets() = default;
    explicit UdpServiceTargets(const Plan& plan);

    // Counts `port`'s frontends and endpoints in (nothing for a port that is
    // not UDP). A frontend it leads to is no longer retired.
    void add(const ServicePortPlan& port);
    // Takes out what add(port) counted in; a frontend no added port leads to
    // any more is retired. Precondition: `port` (equal by value) was added
    // and not removed since.
    void remove(const ServicePortPlan& port);
    // Retires the frontends of `dnated` that no added port leads to.
    void retire(const UdpFrontends& dnated);
    // Retires what `earlier` (the targets of an earlier plan) tracked or had
    // retired that these targets do not track.
    void retire_missing(const UdpServiceTargets& earlier);
    // Forgets the retired frontends of `family` (NodePorts count for both):
    // a reconcile of that family has deleted their stale flows.
    void forget_retired(IpFamily family);

    // A flow to a service address:port or to a NodePort (any address) is
    // stale when its frontend has serving endpoints and the reply does not
    // come from one of them (DNATed to a removed endpoint, or recorded before
    // the port had endpoints); or when its frontend has none, or is retired,
    // and something DNATed it (the reply source is not the original
    // destination): its packets would reach the old endpoint instead of the
    // refusal, or of whatever now owns the address. An undNATed flow to such
    // a frontend is left alone: it meets the refusal anyway, or is not ours.
    bool stale(const UdpFlow& flow) const;
    // Whether some frontend of `family` (by its address) is tracked or
    // retired; a NodePort counts for both families.
    bool tracks(IpFamily family) const;

  private:
    // How many added ports serve each endpoint: two ports sharing an address
    // (external IPs are not unique in the API) keep the flows of either's
    // endpoints, and removing one keeps the other's. No count is zero.
    using EndpointCounts = std::map<std::pair<IpAddress, uint16_t>, size_t>;
    struct Frontend {
        size_t ports = 0;  // the added ports leading here; never 0 in a map
        EndpointCounts endpoints;
    };
    void count(const ServicePortPlan& port, bool in);
    void retire_address(const std::pair<IpAddress, uint16_t>& address);
    void retire_node_port(uint16_t node_port);
    static bool stale_at(const Frontend& frontend, const UdpFlow& flow);

    std::map<std::pair<IpAddress, uint16_t>, Frontend> by_address_;
    std::map<uint16_t, Frontend> by_node_port_;
    size_t v4_addresses_ = 0;  // keys of by_address_ per family, for tracks()
    size_t v6_addresses_ = 0;
    std::set<std::pair<IpAddress, uint16_t>> retired_addresses_;
    std::array<std::set<uint16_t>, 2> retired_node_ports_;  // IPv4, IPv6
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
// The same with the targets of the whole `plan`, built for this call (no
// frontend is retired).
std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan, ConntrackTable& table);

// What a backend runs after each sync: the reconcile above over targets it
// keeps from one call to the next. With the plan of the previous call, only
// the service ports that differ (rules/port_changes.h: the plan's change set
// when it names that plan) are taken out of and put into the targets, so a
// one-change sync costs that change and the dump; without it (the first sync,
// a full resync, a plan made by hand: revision 0) they are built from the
// whole plan, and what the previous targets had that the new ones lack is
// retired. Either way a call deletes what the whole-plan reconcile deletes,
// and the DNATed flows of the frontends retired since the last successful
// reconcile of their family; a failed one is retried by the next call,
// which compares the whole table again. Owns its table. Not thread-safe
// (the backend's sync runner is its one caller).
class UdpConntrackReconciler {
  public:
    // Precondition: `table` is not null.
    explicit UdpConntrackReconciler(std::unique_ptr<ConntrackTable> table);

    // `previous`: the plan given to the last call, or nullptr when unknown.
    // It is used only when its revision is the one the targets were built
    // for (revisions are distinct per planned plan, rules/plan.h).
    // `changed`: changed_ports(*previous, plan) when the caller has computed
    // it already (so it is not computed twice), else nullptr.
    // `dnated_before`: the frontends the kernel's rules DNATed before this
    // sync, when the backend read them (see wants_dnated_before()); those the
    // plan lacks are retired. It is what tells a start which Services were
    // deleted while no daemon ran.
    std::vector<ConntrackReconcile> reconcile(const Plan& plan, const Plan* previous,
                                              const std::vector<PortChange>* changed = nullptr,
                                              const UdpFrontends* dnated_before = nullptr);
    // True until the first reconcile(): from then on the reconciler retires
    // what it saw go, and needs no `dnated_before` (reading it can cost the
    // backend a dump of its dispatch maps).
    bool wants_dnated_before() const { return !reconciled_; }

  private:
    void update_targets(const Plan& plan, const Plan* previous,
                        const std::vector<PortChange>* changed);

    std::unique_ptr<ConntrackTable> table_;
    UdpServiceTargets targets_;
    uint64_t targets_revision_ = 0;  // the plan targets_ reflect; 0: none known
    bool reconciled_ = false;        // reconcile() has run
};

}  // namespace sb::rules
