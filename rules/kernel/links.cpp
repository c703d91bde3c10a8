#include "rules/kernel/links.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "rules/kernel/netlink_socket.h"

namespace sb::rules {

Result<NetlinkSocket> open_route_socket() {
    return NetlinkSocket::open(NETLINK_ROUTE, "rtnetlink");
}

Result<std::vector<InterfaceAddress>> interface_addresses() {
    auto socket = open_route_socket();
    if (!socket) return socket.error();
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_GETADDR;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    nlh->nlmsg_seq = socket->next_seq();
    auto* request = static_cast<ifaddrmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(ifaddrmsg)));
    request->ifa_family = AF_UNSPEC;

    std::vector<InterfaceAddress> out;
    Status listed = socket->dump(nlh, "list the addresses", [&](const nlmsghdr* m) {
        if (m->nlmsg_type != RTM_NEWADDR) return;
        const auto* ifa = static_cast<const ifaddrmsg*>(mnl_nlmsg_get_payload(m));
        if (ifa->ifa_family != AF_INET && ifa->ifa_family != AF_INET6) return;
        const IpFamily family = ifa->ifa_family == AF_INET ? IpFamily::kV4 : IpFamily::kV6;
        const size_t size = family == IpFamily::kV4 ? 4 : 16;
        // IFA_LOCAL is the interface's own address where it differs from
        // IFA_ADDRESS (point-to-point); IPv6 has only IFA_ADDRESS.
        const nlattr* local = nullptr;
        const nlattr* address = nullptr;
        const auto* tail = static_cast<const char*>(mnl_nlmsg_get_payload_tail(m));
        for (auto* attr =
                 static_cast<const nlattr*>(mnl_nlmsg_get_payload_offset(m, sizeof(ifaddrmsg)));
             mnl_attr_ok(attr, static_cast<int>(tail - reinterpret_cast<const char*>(attr)));
             attr = mnl_attr_next(attr)) {
            if (mnl_attr_get_payload_len(attr) != size) continue;
            if (mnl_attr_get_type(attr) == IFA_LOCAL) local = attr;
            if (mnl_attr_get_type(attr) == IFA_ADDRESS) address = attr;
        }
        if (const nlattr* own = local ? local : address) {
            out.push_back(InterfaceAddress{
                ifa->ifa_index, IpAddress::from_bytes(family, static_cast<const uint8_t*>(
                                                                  mnl_attr_get_payload(own)))});
        }
    });
    if (!listed) return listed.error();
    return out;
}

Result<std::optional<std::vector<IpAddress>>> link_addresses(const char* name) {
    const unsigned index = if_nametoindex(name);
    if (index == 0) {
        if (errno == ENODEV) return std::optional<std::vector<IpAddress>>();
        return make_error(ErrorCode::kKernel, fmt::format("rtnetlink: look up link {}", name),
                          errno);
    }
    auto all = interface_addresses();
    if (!all) {
        return make_error(all.error().code, fmt::format("{} (of {})", all.error().message, name),
                          all.error().errno_value);
    }
    std::vector<IpAddress> out;
    for (const InterfaceAddress& entry : *all) {
        if (entry.interface_index == index) out.push_back(entry.address);
    }
    return std::optional<std::vector<IpAddress>>(std::move(out));
}

Result<bool> remove_link(const char* name) {
    if (std::strlen(name) >= IFNAMSIZ) {
        return make_error(ErrorCode::kInvalidArgument, fmt::format("link name too long: {}", name));
    }
    auto socket = open_route_socket();
    if (!socket) return socket.error();
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(buf.data());
    nlh->nlmsg_type = RTM_DELLINK;
    nlh->nlmsg_flags = NLM_F_REQUEST;
    nlh->nlmsg_seq = socket->next_seq();
    mnl_nlmsg_put_extra_header(nlh, sizeof(ifinfomsg));
    mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
    Status deleted = socket->request(nlh);
    if (!deleted) {
        if (deleted.error().errno_value == ENODEV) return false;
        return make_error(ErrorCode::kKernel, fmt::format("rtnetlink: delete link {}", name),
                          deleted.error().errno_value);
    }
    return true;
}

}  // namespace sb::rules
