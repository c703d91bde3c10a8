// What the IPVS backend wants in the kernel, kept from one sync to the next
// so that a partial sync re-renders only the service ports that changed:
// the virtual servers (rules/ipvs/render.h), how many service ports bring
// each of them and each service address, and, for the helper table, each
// changed port's fragment (rules/ipvs/helper_rules.h). A full rebuild and
// any sequence of updates give the same state (tests/unit/rules/ipvs/
// test_backend.cpp compares the kernels they leave). Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "base/ip.h"
#include "rules/backend.h"
#include "rules/ipvs/model.h"
#include "rules/ipvs/render.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/model.h"
#include "rules/plan.h"
#include "rules/port_changes.h"

namespace sb::rules::ipvs {

class DesiredState {
  public:
    // Renders the whole plan for `node_ports` (the NodePort addresses).
    // Virtual servers inside options.ipvs_exclude_cidrs are left out.
    void rebuild(const Plan& plan, const BackendOptions& options,
                 const std::vector<IpAddress>& node_ports);

    // What update() did, for the backend's partial sync.
    struct Update {
        std::set<ServiceKey> touched;  // virtual servers whose wanted state may differ
        nftables::Delta helper;        // the helper model's change (see update_model)
    };
    // Applies `changes` (rules/port_changes.h) to the state and to
    // `helper_model` (the helper table as the kernel has it, changed in
    // place). False, with neither changed, when a virtual server they touch
    // is brought by more than one service port (external IPs are not
    // unique): the caller rebuilds instead. Precondition: rebuild() ran with
    // the same options and node ports.
    bool update(const std::vector<PortChange>& changes, const BackendOptions& options,
                nftables::Model& helper_model, Update& out);

    const IpvsState& services() const { return services_; }
    // The ClusterIPs, external IPs and LB IPs some service port brings, sorted.
    std::vector<IpAddress> service_addresses() const;
    const std::vector<IpAddress>& node_ports() const { return node_ports_; }
    bool built() const { return built_; }
    void forget() { built_ = false; }

  private:
    // One port's render, --ipvs-exclude-cidrs applied; empty for an
    // invalid port.
    Rendered render_one(const ServicePortPlan& port, const BackendOptions& options) const;

    bool built_ = false;
    std::vector<IpAddress> node_ports_;
    IpvsState services_;
    std::map<ServiceKey, uint32_t> owners_;         // service ports bringing each server
    std::map<IpAddress, uint32_t> address_owners_;  // service ports bringing each address
};

}  // namespace sb::rules::ipvs
