// The iptables backend: programs switchboard's SWITCHBOARD-* chains in the
// nat and filter tables of the legacy x_tables interface through libiptc
// (IPv4) and libip6tc (IPv6), the shape of kube-proxy's iptables mode. See
// docs/iptables.md.
#pragma once

#include <memory>

#include "rules/backend.h"
#include "rules/conntrack.h"
#include "rules/iptables/chain_names.h"
#include "rules/iptables/route_localnet.h"
#include "rules/iptables/xtables.h"

namespace sb::rules::iptables {

// A backend that owns the chains prefixed SWITCHBOARD- and its jump rules
// from the built-in chains, nothing else. Creating it touches no kernel
// state. Not thread-safe (see Backend).
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

// The kernel edges a backend talks to; the unit tests pass fakes.
struct BackendEdges {
    std::unique_ptr<Xtables> xtables;           // not null
    std::unique_ptr<ConntrackTable> conntrack;  // not null
    ChainHash chain_hash = default_chain_hash;
    // Set once localhost NodePorts are effective (render.h); not null.
    std::unique_ptr<RouteLocalnet> route_localnet;
};
// The same over the given edges (make_backend(options): libiptc, the
// kernel's conntrack table, the real chain hash and this network
// namespace's route_localnet).
std::unique_ptr<Backend> make_backend(const BackendOptions& options, BackendEdges edges);

}  // namespace sb::rules::iptables
