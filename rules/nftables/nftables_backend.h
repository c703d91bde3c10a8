// The nftables backend: programs switchboard's own `inet switchboard` table
// through a Channel (rules/nftables/channel.h): libnftnl + libmnl, no `nft`
// binary at run time; UDP conntrack reconciled through a ConntrackTable
// (rules/conntrack.h). See docs/nftables.md for the ruleset shape and why.
#pragma once

#include <functional>
#include <memory>

#include "base/result.h"
#include "rules/backend.h"
#include "rules/conntrack.h"
#include "rules/nftables/channel.h"

namespace sb::rules::nftables {

// Opens the channel to the kernel; called by the first sync() or cleanup()
// and again after an open failed.
using ChannelOpener = std::function<Result<std::unique_ptr<Channel>>()>;

// A backend that owns the table `inet switchboard` and nothing else.
// Creating it touches no kernel state; the first sync() opens the netlink
// socket. Not thread-safe (see Backend).
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

// The kernel edges a backend talks to; the unit tests pass fakes.
struct BackendEdges {
    ChannelOpener open_channel;                 // not empty
    std::unique_ptr<ConntrackTable> conntrack;  // not null
};
// The same over the given edges (make_backend(options): the netlink socket
// and the kernel's conntrack table).
std::unique_ptr<Backend> make_backend(const BackendOptions& options, BackendEdges edges);

}  // namespace sb::rules::nftables
