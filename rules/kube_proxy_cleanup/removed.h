// What one --cleanup-kube-proxy run removed, per kind, and its summary
// line: the record every step (steps.h) adds to and remove_kube_proxy_leftovers()
// (kube_proxy_cleanup.h) returns. Plain values; not thread-safe.
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace sb::rules::kube_proxy_cleanup
