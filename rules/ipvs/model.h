// The data model of switchboard's IPVS objects: virtual servers (one per
// address, protocol and port a service port answers on) and their real
// servers, as render() produces them from a Plan, as the kernel lists them
// (rules/ipvs/kernel.h), as diff() compares them and as to_ipvsadm_text()
// prints them in `ipvsadm -Sn` form. Plain values; no kernel access.
// docs/ipvs.md gives the shape and why.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/ip.h"

namespace sb::rules::ipvs {

// What identifies a virtual server in the kernel (IPVS_SVC_ATTR_AF,
// _PROTOCOL, _ADDR, _PORT); the family is the address's.
struct ServiceKey {
    IpAddress address;
    uint8_t protocol = 0;  // IPPROTO_TCP, IPPROTO_UDP or IPPROTO_SCTP
    uint16_t port = 0;     // host order
    auto operator<=>(const ServiceKey&) const = default;
};

// IPVS_SVC_F_PERSISTENT in IPVS_SVC_ATTR_FLAGS: ClientIP affinity.
inline constexpr uint32_t kPersistentFlag = 0x0001;

struct VirtualServer {
    ServiceKey key;
    std::string scheduler = "rr";  // rr, lc, dh, sh, sed, nq
    // Persistence (sessionAffinity ClientIP): timeout_seconds > 0. The
    // netmask is then the host's (/32, /128), as kube-proxy sets it.
    bool persistent = false;
    uint32_t timeout_seconds = 0;
    bool operator==(const VirtualServer&) const = default;
};

// IP_VS_CONN_F_MASQ: the one forwarding method switchboard uses (NAT).
inline constexpr uint32_t kForwardMasquerade = 0;

struct RealServer {
    IpAddress address;
    uint16_t port = 0;  // host order
    uint32_t weight = 1;
    // As the kernel lists them; render() leaves them 0 and diff() compares
    // neither.
    uint32_t active_connections = 0;
    uint32_t inactive_connections = 0;

    // A real server's identity within its virtual server.
    auto id() const { return std::pair<const IpAddress&, uint16_t>(address, port); }
};

struct Service {
    VirtualServer server;
    std::vector<RealServer> destinations;  // sorted by (address, port), unique
};

// Every virtual server switchboard wants (render) or found (listing).
using IpvsState = std::map<ServiceKey, Service>;

// One change to the kernel's IPVS table: one generic-netlink request.
enum class OpKind : uint8_t {
    kAddService,         // IPVS_CMD_NEW_SERVICE (server)
    kEditService,        // IPVS_CMD_SET_SERVICE (server: scheduler, persistence)
    kDeleteService,      // IPVS_CMD_DEL_SERVICE (server.key; its real servers go with it)
    kAddDestination,     // IPVS_CMD_NEW_DEST    (server.key, destination)
    kEditDestination,    // IPVS_CMD_SET_DEST    (server.key, destination: weight)
    kDeleteDestination,  // IPVS_CMD_DEL_DEST    (server.key, destination's address and port)
};
const char* to_string(OpKind kind);

struct Op {
    OpKind kind = OpKind::kAddService;
    VirtualServer server;
    RealServer destination;  // the destination kinds only
};

// "add destination TCP 10.96.0.10:80 -> 10.244.1.7:8080", for errors and logs.
std::string describe(const Op& op);

// "TCP" / "UDP" / "SCTP" for ipvsadm's -t / -u / --sctp-service and logs.
const char* protocol_name(uint8_t protocol);

// `ipvsadm -Sn` text of `state`, virtual servers in key order, each
// followed by its real servers: "-A -t 10.96.0.1:443 -s rr [-p 10800]" and
// "-a -t 10.96.0.1:443 -r 10.0.0.5:6443 -m -w 1"; IPv6 addresses in
// brackets. `ipvsadm -R` loads it back into the same state.
std::string to_ipvsadm_text(const IpvsState& state);

}  // namespace sb::rules::ipvs
