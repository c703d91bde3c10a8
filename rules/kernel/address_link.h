// An interface of switchboard's that carries host addresses: sb-dns0 for
// the node-local DNS addresses (rules/dns_local/dns_local.h), sb-ipvs0 for
// the IPVS mode's service addresses (rules/ipvs/ipvs_backend.h). Through
// rtnetlink; each call opens its own socket. Not thread-safe per link name.
#pragma once

#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules {

// The link `link_name` (at most 15 bytes) exists (a dummy, else a port-less
// bridge), is up, and carries exactly `addresses` as host addresses (IPv6
// link-local ones the kernel adds are left alone). A link of that name and
// another kind is not switchboard's: an error, and nothing is changed.
Status ensure_address_link(const char* link_name, const std::vector<IpAddress>& addresses);

// Deletes the link; absent is success.
Status remove_address_link(const char* link_name);

}  // namespace sb::rules
