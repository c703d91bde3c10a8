// The IPVS generic-netlink messages (family "IPVS", <linux/ip_vs.h>): the
// requests for rules/ipvs/model.h values and the parsing of the listings'
// replies back into them. Pure: no socket; the caller resolves the family id
// (genl_ctrl_resolve) and sends (rules/ipvs/netlink_kernel.cpp).
//
// The layouts are what the kernel's ip_vs_ctl.c parses
// (ip_vs_genl_parse_service, ip_vs_genl_parse_dest) and ipvsadm's libipvs
// sends: AF, PROTOCOL u16; ADDR 16 bytes (union nf_inet_addr, IPv4 in the
// first 4); PORT u16 in network order; a service in full adds SCHED_NAME,
// FLAGS {flags, mask ~0}, TIMEOUT and NETMASK (0xffffffff, or 128 for
// IPv6); a real server in full is ADDR, PORT, FWD_METHOD (masquerade),
// WEIGHT, U_THRESH and L_THRESH (0) and ADDR_FAMILY. Requests carry
// NLM_F_REQUEST and NLM_F_ACK, dumps NLM_F_REQUEST and NLM_F_DUMP; the port
// and sequence number are left for libnl to fill in when sending.
//
// Every value is validated before a message is built: the protocol is TCP,
// UDP or SCTP, ports are not 0, the scheduler is one the kernel has (rr lc
// dh sh sed nq wrr wlc lblc lblcr), a real server has its virtual server's
// family and a weight the kernel takes (at most INT32_MAX), persistence has
// a timeout of 1-86400 s (Kubernetes' bound) and no timeout comes without
// it. A bad value is an error of code kInvalidArgument and no message.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/result.h"
#include "rules/ipvs/kernel.h"
#include "rules/ipvs/model.h"

struct nl_msg;
struct nlmsghdr;

namespace sb::rules::ipvs {

struct MessageFree {
    void operator()(nl_msg* msg) const;
};
// One netlink message, owned.
using Message = std::unique_ptr<nl_msg, MessageFree>;

// "TCP 10.96.0.1:443", "UDP [fd00::a]:53": a virtual server in messages.
std::string service_text(const ServiceKey& key);

// The request for `op` (IPVS_CMD_NEW_SERVICE ... IPVS_CMD_DEL_DEST, see
// OpKind). A delete carries only what identifies its object.
Result<Message> build_op(int family, const Op& op);

// IPVS_CMD_GET_SERVICE, a dump of every virtual server.
Result<Message> build_service_dump(int family);

// IPVS_CMD_GET_DEST, a dump of the real servers of the virtual server `key`.
Result<Message> build_destination_dump(int family, const ServiceKey& key);

// IPVS_CMD_SET_CONFIG with the non-zero timeouts; an error when all are 0
// (there is nothing to send). Each is at most 2147483 s, as the kernel keeps
// them in an int of jiffies.
Result<Message> build_set_config(int family, const Timeouts& timeouts);

// One reply of a GET_SERVICE dump. nullopt for a virtual server switchboard
// cannot name, never its own: a firewall-mark one (no address), or one of
// another protocol or of port 0. An error when a required attribute is
// missing or short.
Result<std::optional<VirtualServer>> parse_service(const nlmsghdr* reply);

// One reply of a GET_DEST dump of a virtual server of `service_family` (the
// real server's own when the kernel lists IPVS_DEST_ATTR_ADDR_FAMILY), with
// its connection counts. An error when a required attribute is missing or
// short.
Result<RealServer> parse_destination(const nlmsghdr* reply, IpFamily service_family);

}  // namespace sb::rules::ipvs
