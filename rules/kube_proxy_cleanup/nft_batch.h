// nftables requests of any table and family over a NetlinkSocket
// (libnftnl messages): dumps, the table list, and transactions. The steps
// that remove kube-proxy's nftables objects share them;
// rules/nftables/netlink.h is bound to switchboard's own `inet switchboard`
// table, so it cannot serve here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/result.h"
#include "rules/netlink_socket.h"

namespace sb::rules::kube_proxy_cleanup {

// Fills a message's payload (e.g. with nftnl_chain_nlmsg_build_payload).
using FillMessage = std::function<void(nlmsghdr*)>;

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

// The messages of one transaction, in order. Not thread-safe.
class NftBatch {
  public:
    // `what` names the change for an error message ("delete chain ip nat
    // KUBE-SERVICES").
    void add(uint16_t type, uint16_t family, std::string what, const FillMessage& fill);
    bool empty() const { return what_.empty(); }

  private:
    friend Status nft_commit(NetlinkSocket& socket, const NftBatch& batch);
    std::vector<char> bytes_;        // the messages, each aligned
    std::vector<size_t> offsets_;    // where each message starts in bytes_
    std::vector<std::string> what_;  // what_[k - 1] describes message k (1..)
    std::vector<char> scratch_;      // where add() builds one message
};

// Sends `batch` as one transaction, which the kernel applies whole or not
// at all; the error names the first refused change. An empty batch sends
// nothing.
Status nft_commit(NetlinkSocket& socket, const NftBatch& batch);

}  // namespace sb::rules::kube_proxy_cleanup
