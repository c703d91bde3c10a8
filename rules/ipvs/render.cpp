#include "rules/ipvs/render.h"

#include <algorithm>

#include "rules/service_policy.h"
#include "rules/validate.h"

namespace sb::rules::ipvs {

namespace {

VirtualServer server_settings(const ServicePortPlan& port, const BackendOptions& options) {
    VirtualServer server;
    server.scheduler = port.ipvs_scheduler.empty() ? options.ipvs_scheduler : port.ipvs_scheduler;
    if (port.session_affinity.client_ip) {
        server.persistent = true;
        server.timeout_seconds = port.session_affinity.timeout_seconds != 0
                                     ? port.session_affinity.timeout_seconds
                                     : kDefaultAffinitySeconds;
    }
    return server;
}

// The real servers of a route: its endpoint set when it has endpoints,
// else none. Sorted by (address, port) and unique, weight 1.
std::vector<RealServer> real_servers(const FamilyPolicy& policy, const TrafficRoute& route) {
    std::vector<RealServer> out;
    if (!route.has_endpoints) return out;
    for (const Endpoint& e : policy.endpoints(route.endpoints)) {
        RealServer rs;
        rs.address = e.ip;
        rs.port = e.port;
        out.push_back(rs);
    }
    auto by_id = [](const RealServer& a, const RealServer& b) { return a.id() < b.id(); };
    auto same_id = [](const RealServer& a, const RealServer& b) { return a.id() == b.id(); };
    std::sort(out.begin(), out.end(), by_id);
    out.erase(std::unique(out.begin(), out.end(), same_id), out.end());
    return out;
}

class Renderer {
  public:
    Renderer(const BackendOptions& options, const std::vector<IpAddress>& node_port_addresses)
        : options_(options), node_port_addresses_(node_port_addresses) {}

    void add_port(const ServicePortPlan& port) {
        if (!validate_service(port)) {
            ++out_.invalid_ports;
            return;
        }
        const VirtualServer settings = server_settings(port, options_);
        const uint8_t protocol = ip_protocol_number(port.protocol);
        for (const FamilyPolicy& policy : service_policy(port, options_).families) {
            const std::vector<RealServer> internal =
                real_servers(policy, policy.cluster_ip_traffic);
            const std::vector<RealServer> external = real_servers(policy, policy.external_traffic);
            auto add = [&](const IpAddress& address, uint16_t service_port,
                           const std::vector<RealServer>& destinations) {
                Service service{settings, destinations};
                service.server.key = ServiceKey{address, protocol, service_port};
                if (!out_.services.emplace(service.server.key, std::move(service)).second) {
                    ++out_.duplicate_servers;
                }
            };
            add(policy.cluster_ip, port.port, internal);
            out_.link_addresses.push_back(policy.cluster_ip);
            for (const auto* frontends : {&policy.external_ips, &policy.load_balancer_ips}) {
                for (const IpAddress& address : *frontends) {
                    add(address, port.port, external);
                    out_.link_addresses.push_back(address);
                }
            }
            if (!policy.has_node_port) continue;
            for (const IpAddress& address : node_port_addresses_) {
                if (address.family() == policy.family) add(address, port.node_port, external);
            }
        }
    }

    Rendered finish() && {
        std::vector<IpAddress>& link = out_.link_addresses;
        std::sort(link.begin(), link.end());
        link.erase(std::unique(link.begin(), link.end()), link.end());
        return std::move(out_);
    }

  private:
    const BackendOptions& options_;
    const std::vector<IpAddress>& node_port_addresses_;
    Rendered out_;
};

}  // namespace

Rendered render(const Plan& plan, const BackendOptions& options,
                const std::vector<IpAddress>& node_port_addresses) {
    Renderer renderer(options, node_port_addresses);
    for (const ServicePortPlan& port : plan.services) renderer.add_port(port);
    return std::move(renderer).finish();
}

Rendered render_port(const ServicePortPlan& port, const BackendOptions& options,
                     const std::vector<IpAddress>& node_port_addresses) {
    Renderer renderer(options, node_port_addresses);
    renderer.add_port(port);
    return std::move(renderer).finish();
}

}  // namespace sb::rules::ipvs
