// net.ipv4.conf.all.route_localnet, the one sysctl the iptables backend
// sets (kube-proxy's iptables NewProxier, for localhost NodePorts): with it
// the kernel routes packets from and to 127.0.0.0/8 off the loopback
// interface, so a connection to 127.0.0.1:NODEPORT that DNAT sends to a Pod
// keeps its way there and back. A small interface so the unit tests never
// touch the host's setting.
#pragma once

#include <memory>

#include "base/result.h"

namespace sb::rules::iptables {

class RouteLocalnet {
  public:
    virtual ~RouteLocalnet() = default;
    // Makes the setting 1; true when it changed (it was not 1 before), false
    // when it already was. Idempotent. Never turns it back off: see
    // docs/iptables.md, "Localhost NodePorts".
    virtual Result<bool> enable() = 0;
};

// The setting of this process's network namespace, through
// /proc/sys/net/ipv4/conf/all/route_localnet (a fixed path, a fixed value).
std::unique_ptr<RouteLocalnet> make_kernel_route_localnet();

}  // namespace sb::rules::iptables
