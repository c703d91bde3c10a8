// Local traffic: what kube-proxy's LocalTrafficDetector (--detect-local-mode)
// decides, decided here once for every backend. A packet is "local" when it
// comes from a Pod on this node. Each backend renders the matches below in
// its own form (nftables: `ip saddr` / `meta iifname`; iptables: -s / -i)
// at the places kube-proxy uses the detector:
//   - ClusterIP traffic that is not local is masqueraded (unless
//     --masquerade-all masquerades all of it);
//   - local traffic to an external address (NodePort, externalIP, LB IP) of
//     an externalTrafficPolicy Local service is short-circuited to the
//     cluster endpoints (whatever the internal policy, as kube-proxy).
// With no match for a family (kube-proxy's no-op detector) neither happens.
//
// Interface matches test the input interface. The rules that use them run
// in the nat prerouting and output hooks; a locally originated packet
// (output hook) has no input interface, so it is never local, as in
// kube-proxy (the node's own traffic has its own `fib saddr type local` /
// `--src-type LOCAL` rules). Pure; thread-safe. docs/nftables.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/ip.h"
#include "rules/backend.h"

namespace sb::rules {

// One way a packet is recognised as local.
struct LocalMatch {
    enum class Kind : uint8_t {
        kSource,           // the source address is inside `source`
        kInterface,        // it arrived on the interface named `interface`
        kInterfacePrefix,  // it arrived on an interface whose name starts with `interface`
    };
    Kind kind = Kind::kSource;
    Prefix source;
    std::string interface;
    bool operator==(const LocalMatch&) const = default;
};

// The alternatives that make a packet of `family` local: it is local when any
// one matches. kClusterCidr and kNodeCidr: one kSource per prefix of that
// family in cluster_cidrs (none: empty, the no-op detector); the interface
// modes: one interface match, the same for both families.
// Precondition: validate_options(options) succeeded.
std::vector<LocalMatch> local_matches(const BackendOptions& options, IpFamily family);

}  // namespace sb::rules
