// nftables listings of any table and family over a NetlinkSocket
// (libnftnl messages): dumps and the table list. The steps that remove
// kube-proxy's nftables objects share them, and write their changes with
// rules/kernel/nft_batch.h; rules/nftables/netlink_reader.h is bound to
// switchboard's own `inet switchboard` table, so it cannot serve here. Not
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "rules/kernel/nft_batch.h"

namespace sb::rules::kube_proxy_cleanup {

// A NETLINK_NETFILTER socket for the requests below; `step` prefixes its
// errors ("iptables-nft").
Result<NetlinkSocket> open_nftables_socket(std::string step);

// A dump request of `type` (NFT_MSG_GET...) in `family`; `fill` adds its
// attributes (nullptr: none); `on_reply` sees every object; `what` names
// the listing in an error.
Status nft_dump(NetlinkSocket& socket, uint16_t type, uint16_t family, const std::string& what,
                const FillMessage& fill, const std::function<void(const nlmsghdr*)>& on_reply);

// An nftables table: its family (NFPROTO_...) and name.
struct NftTable {
    uint16_t family = 0;
    std::string name;
};

// The tables of every family.
Result<std::vector<NftTable>> nft_tables(NetlinkSocket& socket);

// "ip", "ip6", "inet", ... for messages.
const char* nft_family_name(uint16_t family);

}  // namespace sb::rules::kube_proxy_cleanup
