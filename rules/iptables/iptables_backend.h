// The iptables backend: programs switchboard's SWITCHBOARD-* chains in the
// nat and filter tables of the legacy x_tables interface through libiptc
// (IPv4) and libip6tc (IPv6), the shape of kube-proxy's iptables mode. See
// docs/iptables.md.
#pragma once

#include <memory>

#include "rules/backend.h"

namespace sb::rules::iptables {

// A backend that owns the chains prefixed SWITCHBOARD- and its jump rules
// from the built-in chains, nothing else. Creating it touches no kernel
// state. Not thread-safe (see Backend).
std::unique_ptr<Backend> make_backend(const BackendOptions& options);

}  // namespace sb::rules::iptables
