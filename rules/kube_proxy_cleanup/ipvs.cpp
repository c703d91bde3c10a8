// kube-proxy's IPVS virtual servers, through the IPVS generic-netlink layer
// (rules/ipvs/netlink_messages.h, open_kernel()). kube-proxy binds every
// address it serves with IPVS to kube-ipvs0, so the virtual servers at
// kube-ipvs0's addresses are its own; other virtual servers (a user's, or
// kube-proxy's NodePort ones on the node's own addresses, which
// switchboard's DNAT now overtakes) are kept.
#include <errno.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "base/log.h"
#include "rules/ipvs/kernel.h"
#include "rules/kube_proxy_cleanup/steps.h"

namespace sb::rules::kube_proxy_cleanup {

Status remove_ipvs_services(const std::vector<IpAddress>& addresses, Removed& removed) {
    if (addresses.empty()) return {};
    // Resolving the family would load the ip_vs module on a kernel that has
    // it unloaded; an unloaded IPVS holds no virtual servers.
    if (::access("/proc/net/ip_vs", F_OK) != 0) {
        log::debug("ipvs: IPVS is not loaded in this kernel, so no virtual servers to remove");
        return {};
    }
    auto kernel = ipvs::open_kernel();
    if (!kernel) {
        if (kernel.error().code != ErrorCode::kNotFound) return kernel.error();
        log::debug("ipvs: {}, so no virtual servers to remove", kernel.error().message);
        return {};
    }
    // The listing leaves out firewall-mark services: they have no address.
    auto state = (*kernel)->list();
    if (!state) return state.error();
    for (const auto& [key, service] : *state) {
        if (std::find(addresses.begin(), addresses.end(), key.address) == addresses.end()) {
            continue;
        }
        Status deleted =
            (*kernel)->apply(ipvs::Op{ipvs::OpKind::kDeleteService, service.server, {}});
        if (deleted) {
            ++removed.ipvs_services;
            continue;
        }
        // Gone since the listing (kube-proxy still running, or a user).
        const int err = deleted.error().errno_value;
        if (deleted.error().code != ErrorCode::kKernel || (err != ESRCH && err != ENOENT)) {
            return deleted;
        }
    }
    return {};
}

}  // namespace sb::rules::kube_proxy_cleanup
