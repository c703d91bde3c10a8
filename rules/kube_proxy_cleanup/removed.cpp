#include "rules/kube_proxy_cleanup/removed.h"

#include <fmt/format.h>

namespace sb::rules::kube_proxy_cleanup {

bool Removed::nothing() const {
    return legacy_jump_rules == 0 && legacy_chains == 0 && nft_jump_rules == 0 && nft_chains == 0 &&
           nftables_tables == 0 && ipvs_services == 0 && links == 0;
}

std::string describe(const Removed& r) {
    if (r.nothing()) return "nothing of kube-proxy's found";
    return fmt::format(
        "iptables-legacy: {} jump rules, {} chains; iptables-nft: {} jump rules, {} chains; "
        "nftables: {} tables; ipvs: {} virtual servers, {} links",
        r.legacy_jump_rules, r.legacy_chains, r.nft_jump_rules, r.nft_chains, r.nftables_tables,
        r.ipvs_services, r.links);
}

}  // namespace sb::rules::kube_proxy_cleanup
