// The service ports that kube-proxy's sync_proxy_rules_no_local_endpoints_total
// counts, per IP family and traffic kind: a port of that family (a ClusterIP
// of it) whose internal or external traffic policy is Local and that has no
// local endpoint of that family. Kept up to date from the service ports that
// changed between two plans (rules::changed_ports), so a sync after one
// change does not walk every port of the plan.
//
// Not thread-safe: the sync thread owns it.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "base/ip.h"
#include "rules/plan.h"
#include "rules/port_changes.h"

namespace sb::proxy {

class NoLocalEndpointCounts {
  public:
    // Counts every port of `plan`, forgetting what was counted before.
    void reset(const rules::Plan& plan);
    // From the counts of the plan `changes` were computed against to the
    // counts of the plan they lead to.
    void apply(const std::vector<rules::PortChange>& changes);

    uint64_t internal(IpFamily family) const { return internal_[index(family)]; }
    uint64_t external(IpFamily family) const { return external_[index(family)]; }

  private:
    static size_t index(IpFamily family) { return family == IpFamily::kV4 ? 0 : 1; }
    // Adds (+1) or removes (-1) one port's share.
    void count(const rules::ServicePortPlan& port, int sign);

    std::array<uint64_t, 2> internal_{};
    std::array<uint64_t, 2> external_{};
};

}  // namespace sb::proxy
