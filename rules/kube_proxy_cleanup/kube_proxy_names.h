// Which kernel objects are kube-proxy's, from kube-proxy's own cleanup code
// (pkg/proxy/iptables, pkg/proxy/ipvs, pkg/proxy/nftables CleanupLeftovers).
// Pure; thread-safe.
//
// Not kube-proxy's, so kept: kubelet's KUBE-FIREWALL (filter), KUBE-MARK-DROP
// (nat) and KUBE-KUBELET-CANARY (every table) -- kube-proxy creates copies of
// the first two but its cleanup never deletes them, because kubelet owns them
// -- and every chain whose name is not listed here.
#pragma once

#include <string_view>

namespace sb::rules::kube_proxy_cleanup {

// The x_tables tables kube-proxy writes (the same names in IPv4 and IPv6,
// in iptables-legacy and in iptables-nft's `ip`/`ip6` tables).
inline constexpr std::string_view kKubeProxyTables[] = {"nat", "filter", "mangle"};

// Whether `chain` of x_tables table `table` is one kube-proxy creates (in
// iptables or ipvs mode, in any release that has a cleanup for it).
bool is_kube_proxy_chain(std::string_view table, std::string_view chain);

// The nftables table of kube-proxy's nftables mode, in families ip and ip6.
inline constexpr char kNftablesTable[] = "kube-proxy";

// The interface kube-proxy's ipvs mode binds Service addresses to.
inline constexpr char kIpvsLink[] = "kube-ipvs0";

}  // namespace sb::rules::kube_proxy_cleanup
