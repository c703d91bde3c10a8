// `switchboard --cleanup-kube-proxy`: removes what kube-proxy leaves in the
// kernel in any of its modes (iptables, ipvs, nftables) and nothing else.
// What counts as kube-proxy's is decided in kube_proxy_names.h and listed in
// docs/migrating-from-kube-proxy.md.
#pragma once

#include "base/result.h"
#include "rules/kernel/xtables.h"
#include "rules/kube_proxy_cleanup/removed.h"

namespace sb::rules::kube_proxy_cleanup {

// Runs every step, in the order the kernel needs (rules before the chains
// they jump to, IPVS virtual servers before the addresses that select them
// go with kube-ipvs0), and goes on after a step fails so that each run
// leaves less behind. Idempotent: a second run removes nothing and succeeds.
// Creates nothing: an x_tables table this network namespace has not
// instantiated is not opened. The error, on one line, names every step that
// failed. Not thread-safe: one caller at a time (it is run once, before the
// daemon starts). `legacy` is the kernel's x_tables (iptables-legacy):
// libiptc (rules/iptables/iptc.h make_libiptc_xtables()), or a fake in tests.
Result<Removed> remove_kube_proxy_leftovers(XtablesTables& legacy);

}  // namespace sb::rules::kube_proxy_cleanup
