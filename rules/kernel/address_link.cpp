// rtnetlink requests for one of switchboard's address links (sb-dns0,
// sb-ipvs0): find it, create it (dummy first, a port-less bridge where the
// kernel has no dummy type), bring it up, add and delete its addresses,
// delete it. A link of that name and another kind is not ours and is never
// changed.
#include "rules/kernel/address_link.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <algorithm>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "rules/kernel/links.h"
#include "rules/kernel/netlink_socket.h"

namespace sb::rules {

namespace {

struct LinkState {
    int index = 0;
    std::string kind;  // IFLA_INFO_KIND; empty when the link has none
    bool up = false;
};

std::string link_kind(const nlattr* linkinfo) {
    std::string kind;
    mnl_attr_parse_nested(
        linkinfo,
        [](const nlattr* attr, void* data) -> int {
            if (mnl_attr_get_type(attr) == IFLA_INFO_KIND) {
                *static_cast<std::string*>(data) = mnl_attr_get_str(attr);
            }
            return MNL_CB_OK;
        },
        &kind);
    return kind;
}

Result<std::optional<LinkState>> find_link(NetlinkSocket& socket, const char* link_name) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_GETLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = socket.next_seq();
    auto* request = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
    request->ifi_family = AF_UNSPEC;
    std::optional<LinkState> found;
    Status listed = socket.dump(nlh, "list links", [&](const nlmsghdr* m) {
        if (m->nlmsg_type != RTM_NEWLINK) return;
        const auto* ifi = static_cast<const ifinfomsg*>(mnl_nlmsg_get_payload(m));
        std::string name;
        const nlattr* linkinfo = nullptr;
        const auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(m));
        for (auto* attr =
                 static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(m, sizeof(ifinfomsg)));
             mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char*>(attr)));
             attr = mnl_attr_next(attr)) {
            if (mnl_attr_get_type(attr) == IFLA_IFNAME) name = mnl_attr_get_str(attr);
            if (mnl_attr_get_type(attr) == IFLA_LINKINFO) linkinfo = attr;
        }
        if (name != link_name) return;
        found = LinkState{ifi->ifi_index, linkinfo ? link_kind(linkinfo) : std::string(),
                          (ifi->ifi_flags & IFF_UP) != 0};
    });
    if (!listed) return listed.error();
    return found;
}

bool is_ours(const LinkState& link) {
    return link.kind == "dummy" || link.kind == "bridge";
}

Error not_ours(const char* link_name, const LinkState& link) {
    return make_error(ErrorCode::kKernel,
                      fmt::format("link {} exists and is a {}, not switchboard's dummy or bridge: "
                                  "rename or remove it",
                                  link_name, link.kind.empty() ? "link of no kind" : link.kind));
}

// Creates the link up, of `kind`; the kernel's errno tells a missing type.
Status create_link(NetlinkSocket& socket, const char* link_name, const char* kind) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_NEWLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL;
    nlh->nlmsg_seq = socket.next_seq();
    auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
    ifi->ifi_family = AF_UNSPEC;
    // Multicast off: the link would otherwise send IGMP/MLD reports from the
    // DNS addresses (a bridge does) for groups nothing on it needs.
    ifi->ifi_flags = IFF_UP;
    ifi->ifi_change = IFF_UP | IFF_MULTICAST;
    mnl_attr_put_strz(nlh, IFLA_IFNAME, link_name);
    nlattr* info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
    mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kind);
    mnl_attr_nest_end(nlh, info);
    return socket.request(nlh);
}

Status set_up(NetlinkSocket& socket, int index) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_NEWLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST;
    nlh->nlmsg_seq = socket.next_seq();
    auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = index;
    ifi->ifi_flags = IFF_UP;
    ifi->ifi_change = IFF_UP;
    return socket.request(nlh);
}

// RTM_NEWADDR (idempotent through NLM_F_REPLACE) or RTM_DELADDR of a host
// address. IPv6 skips duplicate address detection: the address is the
// node's alone, and while DAD runs (a second or more) it is tentative, which
// the DNS listener cannot bind.
Status change_address(NetlinkSocket& socket, uint16_t type, int index, const IpAddress& address) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = NLM_F_REQUEST | (type == RTM_NEWADDR ? NLM_F_CREATE | NLM_F_REPLACE : 0);
    nlh->nlmsg_seq = socket.next_seq();
    auto* ifa = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
    ifa->ifa_family = address.is_v4() ? AF_INET : AF_INET6;
    ifa->ifa_prefixlen = address.is_v4() ? 32 : 128;
    ifa->ifa_scope = RT_SCOPE_UNIVERSE;
    ifa->ifa_index = static_cast<uint32_t>(index);
    const auto size = static_cast<uint16_t>(address.size());
    mnl_attr_put(nlh, IFA_LOCAL, size, address.bytes());
    if (type == RTM_NEWADDR) {
        mnl_attr_put(nlh, IFA_ADDRESS, size, address.bytes());
        if (address.is_v6()) mnl_attr_put_u32(nlh, IFA_FLAGS, IFA_F_NODAD);
    }
    return socket.request(nlh);
}

Error failed(const std::string& what, const char* link_name, const Status& status) {
    return make_error(ErrorCode::kKernel, fmt::format("rtnetlink: {} {}", what, link_name),
                      status.error().errno_value);
}

}  // namespace

Status ensure_address_link(const char* link_name, const std::vector<IpAddress>& addresses) {
    if (std::char_traits<char>::length(link_name) >= IFNAMSIZ) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("link name {} is longer than 15 bytes", link_name));
    }
    auto socket = open_route_socket();
    if (!socket) return socket.error();
    auto link = find_link(*socket, link_name);
    if (!link) return link.error();
    if (*link && !is_ours(**link)) return not_ours(link_name, **link);
    if (!*link) {
        Status made = create_link(*socket, link_name, "dummy");
        // No dummy type in this kernel (the test machines): a bridge
        // without ports is just as inert a home for local addresses.
        if (!made && made.error().errno_value == EOPNOTSUPP) {
            made = create_link(*socket, link_name, "bridge");
        }
        if (!made) return failed("create link", link_name, made);
        link = find_link(*socket, link_name);
        if (!link) return link.error();
        if (!*link)
            return make_error(
                ErrorCode::kKernel,
                fmt::format("rtnetlink: link {} vanished after its creation", link_name));
    } else if (!(*link)->up) {
        if (Status s = set_up(*socket, (*link)->index); !s) {
            return failed("set up link", link_name, s);
        }
    }
    const int index = (*link)->index;

    auto present = link_addresses(link_name);
    if (!present) return present.error();
    // Sorted copies: IPVS mode keeps every service address here (10k and
    // more), so membership is a binary search, not a scan.
    std::vector<IpAddress> have = present->value_or(std::vector<IpAddress>());
    std::sort(have.begin(), have.end());
    std::vector<IpAddress> wanted = addresses;
    std::sort(wanted.begin(), wanted.end());
    for (const IpAddress& address : have) {
        if (address.is_v6() && address.is_link_local()) continue;
        if (std::binary_search(wanted.begin(), wanted.end(), address)) continue;
        if (Status s = change_address(*socket, RTM_DELADDR, index, address); !s) {
            return failed(fmt::format("delete address {} of", address), link_name, s);
        }
    }
    for (const IpAddress& address : wanted) {
        if (std::binary_search(have.begin(), have.end(), address)) continue;
        if (Status s = change_address(*socket, RTM_NEWADDR, index, address); !s) {
            return failed(fmt::format("add address {} to", address), link_name, s);
        }
    }
    return {};
}

Status remove_address_link(const char* link_name) {
    auto socket = open_route_socket();
    if (!socket) return socket.error();
    auto link = find_link(*socket, link_name);
    if (!link) return link.error();
    if (!*link) return {};
    if (!is_ours(**link)) return not_ours(link_name, **link);
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_DELLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST;
    nlh->nlmsg_seq = socket->next_seq();
    auto* ifi = static_cast<ifinfomsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg)));
    ifi->ifi_family = AF_UNSPEC;
    ifi->ifi_index = (*link)->index;
    Status deleted = socket->request(nlh);
    if (!deleted && deleted.error().errno_value != ENODEV) {
        return failed("delete link", link_name, deleted);
    }
    return {};
}

}  // namespace sb::rules
