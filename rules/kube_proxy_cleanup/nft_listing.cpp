#include "rules/kube_proxy_cleanup/nft_listing.h"

#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

namespace sb::rules::kube_proxy_cleanup {

Result<NetlinkSocket> open_nftables_socket(std::string step) {
    return NetlinkSocket::open(NETLINK_NETFILTER, std::move(step));
}

Status nft_dump(NetlinkSocket& socket, uint16_t type, uint16_t family, const std::string& what,
                const FillMessage& fill, const std::function<void(const nlmsghdr*)>& on_reply) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), type, family, NLM_F_DUMP, socket.next_seq());
    if (fill) fill(nlh);
    return socket.dump(nlh, what, on_reply);
}

Result<std::vector<NftTable>> nft_tables(NetlinkSocket& socket) {
    std::vector<NftTable> out;
    Status listed = nft_dump(
        socket, NFT_MSG_GETTABLE, NFPROTO_UNSPEC, "list tables", nullptr, [&](const nlmsghdr* m) {
            nftnl_table* t = nftnl_table_alloc();
            if (nftnl_table_nlmsg_parse(m, t) == 0) {
                out.push_back(
                    NftTable{static_cast<uint16_t>(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY)),
                             nftnl_table_get_str(t, NFTNL_TABLE_NAME)});
            }
            nftnl_table_free(t);
        });
    if (!listed) return listed.error();
    return out;
}

const char* nft_family_name(uint16_t family) {
    switch (family) {
        case NFPROTO_IPV4:
            return "ip";
        case NFPROTO_IPV6:
            return "ip6";
        case NFPROTO_INET:
            return "inet";
        case NFPROTO_ARP:
            return "arp";
        case NFPROTO_BRIDGE:
            return "bridge";
        case NFPROTO_NETDEV:
            return "netdev";
        default:
            return "unknown";
    }
}

}  // namespace sb::rules::kube_proxy_cleanup
