// The node's side of the IPVS mode, apart from IPVS itself: the sb-ipvs0
// link that makes the service addresses local, the node's own addresses
// (where NodePorts answer), and the sysctls IPVS needs. A small interface
// so the backend's logic is tested with a fake (tests/unit/rules/ipvs); the real
// one is rtnetlink and /proc/sys. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules::ipvs {

// switchboard's dummy interface for the service addresses (kube-proxy's is
// kube-ipvs0); a port-less bridge where the kernel has no dummy type.
inline constexpr const char* kLinkName = "sb-ipvs0";

class HostNetwork {
  public:
    virtual ~HostNetwork() = default;
    // Every address of the node's interfaces other than switchboard's own
    // (kLinkName, and sb-dns0 of --dns-local-address).
    virtual Result<std::vector<IpAddress>> node_addresses() = 0;
    // The addresses on kLinkName; empty when it does not exist.
    virtual Result<std::vector<IpAddress>> link_addresses() = 0;
    // kLinkName exists, is up and carries exactly `addresses`.
    virtual Status ensure_link(const std::vector<IpAddress>& addresses) = 0;
    // kLinkName is gone; absent is success.
    virtual Status remove_link() = 0;
    // Writes `value` to /proc/sys/`path` ("net/ipv4/vs/conntrack").
    virtual Status set_sysctl(const std::string& path, const std::string& value) = 0;
};

// rtnetlink and /proc/sys.
std::unique_ptr<HostNetwork> make_host_network();

}  // namespace sb::rules::ipvs
