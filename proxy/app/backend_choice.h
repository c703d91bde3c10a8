// Choosing the backend: which one a proxy mode makes, the mode the kernel
// can run, and the options a backend is made with once this Node's part is
// resolved (its addresses, --nodeport-addresses=primary,
// --detect-local-mode=NodeCIDR). Shared by the daemon's sync thread and the
// one-shot --dry-run and --cleanup.
//
// Thread safety: every function is pure but mode_in_use() (reads the
// kernel) and log_resolution() (logs); any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "proxy/options/options.h"
#include "rules/backend.h"
#include "watch/snapshot.h"

namespace sb::proxy {

using BackendFactory = std::function<std::unique_ptr<rules::Backend>(const rules::BackendOptions&)>;
// The backend of a proxy mode; an error (one line, exit 1) for modes that
// are not built.
Result<BackendFactory> backend_factory(ProxyMode mode);

// The mode the daemon runs in when `asked` is: ipvs on a kernel without IPVS
// (no ip_vs module) runs nftables instead, with one warning line saying so;
// /proxyMode and the metrics report the mode in use.
ProxyMode mode_in_use(ProxyMode asked);

// --nodeport-addresses=primary: this node's first InternalIP of each family
// (from its Node object) as host prefixes; empty when the Node is unknown.
std::vector<Prefix> primary_node_prefixes(const watch::Snapshot& snapshot,
                                          const std::string& node_name);

// The backend options with what comes from this Node resolved: its
// addresses (kube-proxy's nodeIPs), --nodeport-addresses=primary, and
// --detect-local-mode=NodeCIDR (its spec.podCIDRs replace --cluster-cidr;
// none while the Node or its podCIDRs are unknown: kube-proxy's no-op
// detector, nothing is local by CIDR). log_resolution() reports what it
// could not resolve.
rules::BackendOptions resolved_backend_options(const Options& options,
                                               const watch::Snapshot& snapshot);

// The options resolved_backend_options() takes from the Node differ: a backend
// built with `before` renders stale rules.
bool node_derived_options_differ(const rules::BackendOptions& before,
                                 const rules::BackendOptions& now);

// Logged once per backend built from `backend`.
void log_resolution(const Options& options, const rules::BackendOptions& backend);

}  // namespace sb::proxy
