#include "rules/dns_local/dns_local.h"

#include <algorithm>

#include <fmt/format.h>

#include "rules/dns_local/notrack.h"
#include "rules/kernel/address_link.h"

namespace sb::rules::dns_local {

Status apply(const std::vector<IpAddress>& addresses) {
    if (addresses.empty()) return cleanup();
    // The table first: the address never answers a query that conntrack
    // would then track.
    if (Status s = program_notrack(addresses); !s) return s;
    return ensure_address_link(kLinkName, addresses);
}

Status cleanup() {
    Status link = remove_address_link(kLinkName);
    Status table = program_notrack({});
    if (!link) return link;
    return table;
}

}  // namespace sb::rules::dns_local
