// Diff: which virtual servers of the kernel's listing are switchboard's,
// and the Ops that turn them into the rendered ones, with graceful removal
// of real servers (pure apart from the Drains the caller keeps between
// syncs; not thread-safe: one caller, the backend).
//
// Graceful removal: a TCP real server that is no longer wanted first gets
// weight 0, so the scheduler sends it no new connection, and is deleted
// once it has no active connection or its drain has lasted drain_bound.
// Inactive (closing) connections do not hold it, unlike kube-proxy's
// graceful termination, which waits for them too: they end on their own
// timeouts in the kernel after the delete. UDP and SCTP real servers are
// deleted at once, as kube-proxy does (IsRsGracefulTerminationNeeded):
// datagrams have no end to wait for, and kube-proxy users migrating expect
// SCTP to behave as it did there.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <vector>

#include "base/ip.h"
#include "rules/ipvs/model.h"

namespace sb::rules::ipvs {

// What tells switchboard's virtual servers from others'. A virtual server
// is switchboard's when its address is on switchboard's dummy link or is a
// NodePort address, and lies in none of `excluded` (--ipvs-exclude-cidrs:
// switchboard never adds, changes or deletes a virtual server there; the
// backend filters both the rendered and the listed state with it).
struct Ownership {
    // The addresses on the link as listed and those a sync puts there, so
    // that the virtual servers of an address being removed are deleted too.
    std::vector<IpAddress> link_addresses;
    std::vector<IpAddress> node_port_addresses;
    std::vector<Prefix> excluded;
};

bool owned(const ServiceKey& key, const Ownership& ownership);
// The same when both address lists of `ownership` are sorted (binary search).
bool owned_sorted(const ServiceKey& key, const Ownership& ownership);

// The virtual servers of `listing` that owned() calls switchboard's.
IpvsState owned_part(const IpvsState& listing, const Ownership& ownership);

// A real server within its virtual server.
struct DrainKey {
    ServiceKey server;
    IpAddress address;
    uint16_t port = 0;
    auto operator<=>(const DrainKey&) const = default;
};

// When switchboard set each draining real server's weight to 0. The
// backend keeps it between syncs; diff() updates it. Lost on a restart: a
// weight-0 real server without a record starts its drain anew.
struct Drains {
    std::map<DrainKey, std::chrono::steady_clock::time_point> started;
};

// The Ops that make `current` (the owned part of the kernel's listing, with
// connection counts) match `desired` (render()'s), and updates `drains`
// for the real servers still draining once they are applied. A virtual
// server's settings differ when its scheduler, persistence or (when
// persistent) timeout does; a real server's when its weight does.
// Order, deterministic: service deletes, then service adds and edits (in
// key order), then per virtual server in key order its destination adds,
// edits and deletes (each in (address, port) order), so a virtual server
// gains its new real servers before it loses the old ones. Equal states
// give no Op.
std::vector<Op> diff(const IpvsState& desired, const IpvsState& current, Drains& drains,
                     std::chrono::steady_clock::time_point now, std::chrono::seconds drain_bound);

// The virtual servers with a draining real server (sorted, unique): the
// backend refreshes their connection counts (list_destinations) before the
// next diff, and must sync again while this is not empty.
std::vector<ServiceKey> draining(const Drains& drains);

}  // namespace sb::rules::ipvs
