// The interface carrying the node-local DNS addresses, through rtnetlink.
// Internal to rules/dns_local; dns_local.h states the contract.
#pragma once

#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules::dns_local {

// The link exists (a dummy, else a port-less bridge), is up, and carries
// exactly `addresses` as host addresses (IPv6 link-local ones the kernel
// adds are left alone).
Status ensure_local_link(const std::vector<IpAddress>& addresses);

// Deletes the link; absent is success.
Status remove_local_link();

}  // namespace sb::rules::dns_local
