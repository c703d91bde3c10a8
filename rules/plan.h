// The Plan: the contract between the daemon and the kernel backends.
//
// A Plan lists, for every service port this node proxies, the addresses and
// ports that lead to it, its policies, and the endpoints to use for cluster
// traffic and for node-local traffic. It is plain data computed by the
// planner (proxy/planner.h) from Kubernetes objects; backends read nothing
// else, so they can be tested with hand-made Plans. Every value in a Plan is
// already validated (addresses parsed, ports in range).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/ip.h"

namespace sb::rules {

enum class Protocol : uint8_t { kTCP, kUDP, kSCTP };
const char* to_string(Protocol protocol);       // "TCP", "UDP", "SCTP"
uint8_t ip_protocol_number(Protocol protocol);  // IPPROTO_TCP, ...

enum class TrafficPolicy : uint8_t { kCluster, kLocal };
const char* to_string(TrafficPolicy policy);  // "Cluster", "Local"

struct Endpoint {
    IpAddress ip;
    uint16_t port = 0;
    bool ready = false;
    bool serving = false;
    bool terminating = false;
    std::string node_name;
    std::string zone;
    bool is_local = false;  // node_name is this node

    auto operator<=>(const Endpoint&) const = default;
};

struct SessionAffinity {
    bool client_ip = false;
    uint32_t timeout_seconds = 0;  // meaningful when client_ip
    bool operator==(const SessionAffinity&) const = default;
};

struct ServicePortPlan {
    std::string ns;
    std::string service;
    std::string port_name;
    Protocol protocol = Protocol::kTCP;
    std::vector<IpAddress> cluster_ips;
    uint16_t port = 0;
    uint16_t node_port = 0;  // 0: none
    std::vector<IpAddress> external_ips;
    std::vector<IpAddress> load_balancer_ips;
    std::vector<Prefix> load_balancer_source_ranges;
    TrafficPolicy external_traffic_policy = TrafficPolicy::kCluster;
    TrafficPolicy internal_traffic_policy = TrafficPolicy::kCluster;
    uint16_t health_check_node_port = 0;
    SessionAffinity session_affinity;
    // Endpoints for traffic under the Cluster policy: ready ones (topology
    // filtered), else serving+terminating ones, else none. Sorted by ip, port.
    std::vector<Endpoint> cluster_endpoints;
    // The same rule over the endpoints on this node. Sorted by ip, port.
    std::vector<Endpoint> local_endpoints;

    // "ns/service:portName/protocol": a stable, unique identity in a Plan.
    std::string id() const;
    bool operator==(const ServicePortPlan&) const = default;
};

struct Plan {
    std::string node;
    // Sorted by namespace, service, port name, protocol.
    std::vector<ServicePortPlan> services;
    bool operator==(const Plan&) const = default;
};

}  // namespace sb::rules
