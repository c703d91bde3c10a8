// kube-proxy's IPVS virtual servers, through the IPVS generic netlink family
// (libnl-genl-3). kube-proxy binds every address it serves with IPVS to
// kube-ipvs0, so the virtual servers at kube-ipvs0's addresses are its own;
// other virtual servers (a user's, or kube-proxy's NodePort ones on the
// node's own addresses, which switchboard's DNAT now overtakes) are kept.
#include <arpa/inet.h>
#include <linux/ip_vs.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "base/log.h"
#include "rules/kube_proxy_cleanup/steps.h"

namespace sb::rules::kube_proxy_cleanup {

namespace {

// One virtual server as the kernel names it: the attributes a delete needs.
struct VirtualServer {
    uint16_t af = 0;
    uint16_t protocol = 0;
    std::array<uint8_t, 16> address{};  // union nf_inet_addr
    uint16_t port = 0;                  // network order, as the kernel keeps it
};

struct SocketFree {
    void operator()(nl_sock* socket) const { nl_socket_free(socket); }
};
using GenlSocket = std::unique_ptr<nl_sock, SocketFree>;

Error ipvs_error(const std::string& what, int nl_error) {
    return make_error(ErrorCode::kKernel, "ipvs: " + what + ": " + nl_geterror(nl_error));
}

bool selected(const VirtualServer& vs, const std::vector<IpAddress>& addresses) {
    if (vs.af != AF_INET && vs.af != AF_INET6) return false;
    const IpAddress address =
        IpAddress::from_bytes(vs.af == AF_INET ? IpFamily::kV4 : IpFamily::kV6, vs.address.data());
    return std::find(addresses.begin(), addresses.end(), address) != addresses.end();
}

int collect(nl_msg* msg, void* data) {
    auto& out = *static_cast<std::vector<VirtualServer>*>(data);
    nlattr* attrs[IPVS_CMD_ATTR_MAX + 1];
    if (genlmsg_parse(nlmsg_hdr(msg), 0, attrs, IPVS_CMD_ATTR_MAX, nullptr) < 0 ||
        !attrs[IPVS_CMD_ATTR_SERVICE]) {
        return NL_OK;
    }
    nlattr* svc[IPVS_SVC_ATTR_MAX + 1];
    if (nla_parse_nested(svc, IPVS_SVC_ATTR_MAX, attrs[IPVS_CMD_ATTR_SERVICE], nullptr) < 0) {
        return NL_OK;
    }
    // Firewall-mark services have no address; kube-proxy never makes them.
    if (svc[IPVS_SVC_ATTR_FWMARK] && nla_get_u32(svc[IPVS_SVC_ATTR_FWMARK]) != 0) return NL_OK;
    if (!svc[IPVS_SVC_ATTR_AF] || !svc[IPVS_SVC_ATTR_PROTOCOL] || !svc[IPVS_SVC_ATTR_ADDR] ||
        !svc[IPVS_SVC_ATTR_PORT]) {
        return NL_OK;
    }
    VirtualServer vs;
    vs.af = nla_get_u16(svc[IPVS_SVC_ATTR_AF]);
    vs.protocol = nla_get_u16(svc[IPVS_SVC_ATTR_PROTOCOL]);
    nla_memcpy(vs.address.data(), svc[IPVS_SVC_ATTR_ADDR], static_cast<int>(vs.address.size()));
    vs.port = nla_get_u16(svc[IPVS_SVC_ATTR_PORT]);
    out.push_back(vs);
    return NL_OK;
}

Result<std::vector<VirtualServer>> virtual_servers(nl_sock* socket, int family) {
    std::vector<VirtualServer> out;
    nl_msg* msg = nlmsg_alloc();
    if (!msg) return make_error(ErrorCode::kInternal, "ipvs: out of memory");
    genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, NLM_F_DUMP, IPVS_CMD_GET_SERVICE,
                IPVS_GENL_VERSION);
    nl_socket_modify_cb(socket, NL_CB_VALID, NL_CB_CUSTOM, collect, &out);
    const int sent = nl_send_auto(socket, msg);
    nlmsg_free(msg);
    if (sent < 0) return ipvs_error("list virtual servers", sent);
    if (int r = nl_recvmsgs_default(socket); r < 0) return ipvs_error("list virtual servers", r);
    return out;
}

Status delete_virtual_server(nl_sock* socket, int family, const VirtualServer& vs) {
    nl_msg* msg = nlmsg_alloc();
    if (!msg) return make_error(ErrorCode::kInternal, "ipvs: out of memory");
    genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, IPVS_CMD_DEL_SERVICE,
                IPVS_GENL_VERSION);
    nlattr* nest = nla_nest_start(msg, IPVS_CMD_ATTR_SERVICE);
    nla_put_u16(msg, IPVS_SVC_ATTR_AF, vs.af);
    nla_put_u16(msg, IPVS_SVC_ATTR_PROTOCOL, vs.protocol);
    nla_put(msg, IPVS_SVC_ATTR_ADDR, static_cast<int>(vs.address.size()), vs.address.data());
    nla_put_u16(msg, IPVS_SVC_ATTR_PORT, vs.port);
    nla_nest_end(msg, nest);
    // nl_send_sync frees the message and waits for the acknowledgement.
    const int r = nl_send_sync(socket, msg);
    if (r < 0 && r != -NLE_OBJ_NOTFOUND) {
        const IpAddress address = IpAddress::from_bytes(
            vs.af == AF_INET ? IpFamily::kV4 : IpFamily::kV6, vs.address.data());
        return ipvs_error(fmt::format("delete virtual server {} port {} protocol {}",
                                      address.to_string(), ntohs(vs.port), vs.protocol),
                          r);
    }
    return {};
}

}  // namespace

Status remove_ipvs_services(const std::vector<IpAddress>& addresses, Removed& removed) {
    if (addresses.empty()) return {};
    // Resolving the family would load the ip_vs module on a kernel that has
    // it unloaded; an unloaded IPVS holds no virtual servers.
    if (::access("/proc/net/ip_vs", F_OK) != 0) {
        log::debug("ipvs: IPVS is not loaded in this kernel, so no virtual servers to remove");
        return {};
    }
    GenlSocket socket(nl_socket_alloc());
    if (!socket) return make_error(ErrorCode::kInternal, "ipvs: out of memory");
    if (int r = genl_connect(socket.get()); r < 0) return ipvs_error("connect", r);
    const int family = genl_ctrl_resolve(socket.get(), IPVS_GENL_NAME);
    if (family < 0) {
        log::debug(
            "ipvs: no IPVS generic netlink family in this kernel, so no virtual servers "
            "to remove");
        return {};
    }
    auto servers = virtual_servers(socket.get(), family);
    if (!servers) return servers.error();
    for (const VirtualServer& vs : *servers) {
        if (!selected(vs, addresses)) continue;
        if (Status s = delete_virtual_server(socket.get(), family, vs); !s) return s;
        ++removed.ipvs_services;
    }
    return {};
}

}  // namespace sb::rules::kube_proxy_cleanup
