// The node's links and their addresses, through rtnetlink: the address
// listing rules/ reads (switchboard's own links, kube-proxy's kube-ipvs0,
// the node's addresses) and the deletion of a link by name. Each call opens
// its own socket. Not thread-safe per link name.
#pragma once

#include <optional>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/kernel/netlink_socket.h"

namespace sb::rules {

// One address of one interface.
struct InterfaceAddress {
    unsigned interface_index = 0;
    IpAddress address;
};

// A new rtnetlink socket: the one way rules/ opens one (this file and the
// address link of rules/kernel/address_link.h).
Result<NetlinkSocket> open_route_socket();

// Every address of every interface (rtnetlink's address dump).
Result<std::vector<InterfaceAddress>> interface_addresses();

// The addresses on interface `name`; nullopt when there is no such
// interface.
Result<std::optional<std::vector<IpAddress>>> link_addresses(const char* name);

// Deletes interface `name`, whatever its type. Idempotent: true when it
// was deleted, false when there was no such link.
Result<bool> remove_link(const char* name);

}  // namespace sb::rules
