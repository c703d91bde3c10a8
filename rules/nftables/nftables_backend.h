// The nftables backend: programs switchboard's own `inet switchboard` table
// through libnftnl + libmnl (no `nft` binary at run time). See
// docs/nftables.md for the ruleset shape and why.
#pragma once

#include <memory>

#include "rules/backend.h"

namespace sb::rules::nftables {

// A backend that owns the table `inet switchboard` and nothing else.
// Creating it touches no kernel state; the first sync() opens the netlink
// sockets. Not thread-safe (see Backend).
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace sb::rules::nftables
