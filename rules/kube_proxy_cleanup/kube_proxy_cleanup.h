// `switchboard --cleanup-kube-proxy`: removes what kube-proxy leaves in the
// kernel in any of its modes (iptables, ipvs, nftables) and nothing else.
// What counts as kube-proxy's is decided in kube_proxy_names.h and listed in
// docs/migrating-from-kube-proxy.md.
#pragma once

#include <cstddef>
#include <string>

#include "base/result.h"
#include "rules/xtables.h"

namespace sb::rules::kube_proxy_cleanup {

// What one run removed, per kind (for the log line and for tests).
struct Removed {
    size_t legacy_jump_rules =
        0;                      // iptables-legacy: rules in others' chains jumping to kube-proxy's
    size_t legacy_chains = 0;   // iptables-legacy: kube-proxy's chains
    size_t nft_jump_rules = 0;  // iptables-nft: the same, in the `ip`/`ip6` x_tables-compat tables
    size_t nft_chains = 0;
    size_t nftables_tables = 0;  // `ip kube-proxy`, `ip6 kube-proxy`
    size_t ipvs_services = 0;    // IPVS virtual servers at kube-ipvs0's addresses
    size_t links = 0;            // kube-ipvs0

    bool nothing() const;
};

// "iptables-legacy: 4 jump rules, 19 chains; iptables-nft: ...", or
// "nothing of kube-proxy's found".
std::string describe(const Removed& removed);

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
