#include "rules/kube_proxy_cleanup/kube_proxy_cleanup.h"

#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rules/kernel/links.h"
#include "rules/kube_proxy_cleanup/kube_proxy_names.h"
#include "rules/kube_proxy_cleanup/steps.h"

namespace sb::rules::kube_proxy_cleanup {

namespace {

// kube-ipvs0's addresses select kube-proxy's virtual servers, so the link
// goes only after them: a run that fails in between leaves the link for the
// next run to find them again.
Status remove_ipvs_leftovers(Removed& removed) {
    auto addresses = link_addresses(kIpvsLink);
    if (!addresses) return addresses.error();
    if (!*addresses) return {};
    if (Status s = remove_ipvs_services(**addresses, removed); !s) return s;
    auto deleted = remove_link(kIpvsLink);
    if (!deleted) return deleted.error();
    if (*deleted) ++removed.links;
    return {};
}

}  // namespace

Result<Removed> remove_kube_proxy_leftovers(XtablesTables& legacy) {
    Removed removed;
    std::vector<std::string> failures;
    auto step = [&](Status status) {
        if (!status) failures.push_back(status.error().describe());
    };
    step(remove_legacy_chains(legacy, IpFamily::kV4, removed));
    step(remove_legacy_chains(legacy, IpFamily::kV6, removed));
    step(remove_nft_compat_chains(removed));
    step(remove_nftables_tables(removed));
    step(remove_ipvs_leftovers(removed));
    if (!failures.empty()) {
        return make_error(
            ErrorCode::kKernel,
            fmt::format("{} (removed so far: {})", fmt::join(failures, "; "), describe(removed)));
    }
    return removed;
}

}  // namespace sb::rules::kube_proxy_cleanup
