// The `inet switchboard-dns` table: notrack for the node-local DNS
// addresses, rendered as nftables data and written in one transaction.
// A table of its own rather than chains in the nftables backend's table:
// it is the same in every --proxy-mode (in iptables mode the x_tables nat
// rules run at the same netfilter hooks after it, and an untracked packet
// meets no nat hook at all), and it lives and dies with the addresses, not
// with the backend.
#include "rules/dns_local/notrack.h"

#include <netinet/in.h>

#include <string_view>

#include "rules/dns_local/addresses.h"
#include "rules/nftables/netlink.h"

namespace sb::rules::dns_local {

nftables::Model render_notrack(const std::vector<IpAddress>& addresses) {
    using namespace nftables;
    Model model;
    if (addresses.empty()) return model;
    for (const char* hook : {"prerouting", "output"}) {
        const char* name =
            std::string_view(hook) == "prerouting" ? kNotrackPrerouting : kNotrackOutput;
        Chain& chain = model.chains[name];
        chain.name = name;
        chain.hook = Hook{"filter", hook, kRawPriority};
        for (const IpAddress& address : addresses) {
            const Prefix host(address, address.is_v4() ? 32 : 128);
            for (const uint8_t proto : {uint8_t{IPPROTO_UDP}, uint8_t{IPPROTO_TCP}}) {
                chain.rules.push_back({nfproto(address.family()), daddr(host), l4proto(proto),
                                       th_dport(kDnsPort), notrack()});
                chain.rules.push_back({nfproto(address.family()), saddr(host), l4proto(proto),
                                       th_sport(kDnsPort), notrack()});
            }
        }
    }
    return model;
}

Status program_notrack(const std::vector<IpAddress>& addresses) {
    auto socket = nftables::NetlinkSocket::open();
    if (!socket) return socket.error();
    if (addresses.empty()) return (*socket)->delete_table(kNotrackTable);
    return (*socket)->replace_table(kNotrackTable, render_notrack(addresses));
}

}  // namespace sb::rules::dns_local
