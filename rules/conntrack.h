// UDP conntrack cleanup (libnetfilter_conntrack over netlink, no `conntrack`
// binary). UDP has no connection teardown, so a client keeps sending to a
// removed endpoint (or keeps hitting the reject recorded before a service
// had endpoints) until its conntrack entry expires; kube-proxy deletes those
// entries and so do we. Nothing else in conntrack is touched.
#pragma once

#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/plan.h"

namespace sb::rules {

struct ConntrackFilter {
    enum class Kind : uint8_t {
        kReplySource,   // entries whose reply comes from ip:port (a removed endpoint)
        kOrigDest,      // entries the client sent to ip:port (a service address)
        kOrigDestPort,  // entries the client sent to any address at port (a NodePort)
    };
    Kind kind = Kind::kReplySource;
    IpAddress ip;
    uint16_t port = 0;
    auto operator<=>(const ConntrackFilter&) const = default;
};

// What kube-proxy flushes for UDP service ports between two plans: entries
// of removed endpoints, and entries for the addresses of service ports that
// gained their first endpoint. Pure; the result is sorted, without
// duplicates; empty when a plan is not sorted as Plan promises.
std::vector<ConntrackFilter> stale_udp_conntrack(const Plan& previous, const Plan& plan);
// The same from the changed service ports (see changed_ports in port_changes.h).
std::vector<ConntrackFilter> stale_udp_conntrack(
    const std::vector<std::pair<const ServicePortPlan*, const ServicePortPlan*>>& changed);

// Deletes the UDP entries matching any filter; returns how many were deleted.
Result<size_t> delete_udp_conntrack(const std::vector<ConntrackFilter>& filters);

}  // namespace sb::rules
