// The steps of remove_kube_proxy_leftovers(), one kind of kernel object each
// (one file each). Internal to rules/kube_proxy_cleanup. Each adds what it
// removed to `removed` and is idempotent; none is thread-safe.
#pragma once

#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/kernel/xtables.h"
#include "rules/kube_proxy_cleanup/removed.h"

namespace sb::rules::kube_proxy_cleanup {

// iptables_legacy.cpp: kube-proxy's chains in the nat, filter and mangle
// x_tables of `family` (through `xtables`, under its lock), and the rules of
// other chains that jump or go to them; one commit per table that changes.
// Errors start with the family's iptables-legacy command.
Status remove_legacy_chains(XtablesTables& xtables, IpFamily family, Removed& removed);

// iptables_nft.cpp: the same in iptables-nft's `ip`/`ip6` nat, filter and
// mangle nftables tables, in one nftables transaction.
Status remove_nft_compat_chains(Removed& removed);

// nftables_tables.cpp: the `ip kube-proxy` and `ip6 kube-proxy` tables.
Status remove_nftables_tables(Removed& removed);

// ipvs.cpp: the IPVS virtual servers (address, protocol, port) whose address
// is one of `addresses`; firewall-mark services are never touched. Succeeds
// doing nothing, with a debug line, when this kernel has no IPVS.
Status remove_ipvs_services(const std::vector<IpAddress>& addresses, Removed& removed);

}  // namespace sb::rules::kube_proxy_cleanup
