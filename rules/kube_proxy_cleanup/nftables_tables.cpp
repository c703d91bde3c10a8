// kube-proxy's nftables mode: its `ip kube-proxy` and `ip6 kube-proxy`
// tables, deleted whole (as kube-proxy's own cleanup does) in one
// transaction. Tables of that name in other families are not kube-proxy's.
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <fmt/format.h>

#include "rules/kernel/nft_batch.h"
#include "rules/kube_proxy_cleanup/kube_proxy_names.h"
#include "rules/kube_proxy_cleanup/nft_listing.h"
#include "rules/kube_proxy_cleanup/steps.h"

namespace sb::rules::kube_proxy_cleanup {

Status remove_nftables_tables(Removed& removed) {
    auto socket = open_nftables_socket("nftables");
    if (!socket) return socket.error();
    auto tables = nft_tables(*socket);
    if (!tables) return tables.error();
    NftBatch batch;
    size_t count = 0;
    for (const NftTable& table : *tables) {
        if (table.name != kNftablesTable ||
            (table.family != NFPROTO_IPV4 && table.family != NFPROTO_IPV6)) {
            continue;
        }
        batch.add(NFT_MSG_DELTABLE, table.family,
                  fmt::format("delete table {} {}", nft_family_name(table.family), table.name),
                  [&](nlmsghdr* nlh) {
                      nftnl_table* t = nftnl_table_alloc();
                      nftnl_table_set_str(t, NFTNL_TABLE_NAME, table.name.c_str());
                      nftnl_table_nlmsg_build_payload(nlh, t);
                      nftnl_table_free(t);
                  });
        ++count;
    }
    if (Status s = send(*socket, batch); !s) return s;
    removed.nftables_tables += count;
    return {};
}

}  // namespace sb::rules::kube_proxy_cleanup
