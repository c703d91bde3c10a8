// The kernel's IPVS table as the backend uses it: the listing, one change
// at a time, and the connection timeouts. The real one talks to the IPVS
// generic-netlink family through libnl-genl-3 (rules/ipvs/netlink_kernel.cpp; no
// ipvsadm at run time); tests/unit/rules/ipvs/fake_kernel.h keeps the table as
// data, so the backend's diff and drain logic is tested without the
// module. IPVS has no transactions: each Op is one request, applied in
// order, and a failed one leaves the ones before it applied. Not
// thread-safe; one caller (the backend) at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/result.h"
#include "rules/ipvs/model.h"

namespace sb::rules::ipvs {

// IPVS_CMD_SET_CONFIG; 0 leaves a timeout as the kernel has it
// (kube-proxy's --ipvs-tcp-timeout and friends, default 0).
struct Timeouts {
    uint32_t tcp_seconds = 0;
    uint32_t tcp_fin_seconds = 0;
    uint32_t udp_seconds = 0;
    bool operator==(const Timeouts&) const = default;
};

class IpvsKernel {
  public:
    virtual ~IpvsKernel() = default;
    // Every virtual server (all of them, not only switchboard's: the caller
    // picks its own) with its real servers and their connection counts.
    virtual Result<IpvsState> list() = 0;
    // The real servers of one virtual server, with their connection
    // counts (a draining server's, without listing the whole table).
    virtual Result<std::vector<RealServer>> list_destinations(const ServiceKey& key) = 0;
    // One request; the kernel's refusal is an error naming the Op (model.h's
    // describe()) and carrying its errno
    // (EEXIST for an add of what exists, ENOENT/ESRCH for what does not).
    virtual Status apply(const Op& op) = 0;
    // Sets the non-zero ones; nothing is sent when all are 0.
    virtual Status set_timeouts(const Timeouts& timeouts) = 0;
    // Requests sent since open (listings count one per dump).
    virtual size_t requests_sent() const = 0;
};

// Opens a generic-netlink socket and resolves the "IPVS" family. An error
// of code kNotFound when the kernel has no IPVS (no ip_vs module: the
// build machines), kUnavailable for any other failure.
Result<std::unique_ptr<IpvsKernel>> open_kernel();

}  // namespace sb::rules::ipvs
