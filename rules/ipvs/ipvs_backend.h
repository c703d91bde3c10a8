// The IPVS backend (--proxy-mode=ipvs): one IPVS virtual server per
// service address, protocol and port and per NodePort on each node
// address, real servers from the service policy, the service addresses on
// switchboard's sb-ipvs0 link, and the small helper nftables table
// (rules/ipvs/helper_rules.h) for what IPVS does not do. Only switchboard's
// own virtual servers are changed (rules/ipvs/diff.h: those at sb-ipvs0's
// addresses and at the node's NodePort addresses, minus
// --ipvs-exclude-cidrs). docs/ipvs.md gives the shape, the order of the
// steps of a sync and why.
#pragma once

#include <chrono>
#include <functional>
#include <memory>

#include "base/result.h"
#include "rules/backend.h"
#include "rules/conntrack.h"
#include "rules/ipvs/host_network.h"
#include "rules/ipvs/kernel.h"
#include "rules/nftables/nftables_backend.h"

namespace sb::rules::ipvs {

// Whether this kernel has IPVS (the generic-netlink family resolves). The
// daemon falls back to nftables mode when it does not.
bool ipvs_available();

// How long a removed TCP real server keeps weight 0 for its open
// connections before it is deleted anyway.
inline constexpr std::chrono::seconds kDrainBound{60};

// The kernel edges the backend talks to; the unit tests pass fakes.
using KernelOpener = std::function<Result<std::unique_ptr<IpvsKernel>>()>;
struct BackendEdges {
    KernelOpener open_kernel;                   // not empty
    nftables::ChannelOpener open_helper_table;  // a channel to kHelperTable; not empty
    std::unique_ptr<HostNetwork> host;          // not null
    std::unique_ptr<ConntrackTable> conntrack;  // not null
    std::function<std::chrono::steady_clock::time_point()> now;  // not empty
};

// Creating it touches no kernel state; the first sync() or cleanup() opens
// the sockets. Not thread-safe (see Backend).
std::unique_ptr<Backend> make_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_backend(const BackendOptions& options, BackendEdges edges);

}  // namespace sb::rules::ipvs
