// The plan the iptables backend's tests apply, against the kernel
// (kernel_test.cpp) and against the fake (test_backend.cpp): every feature
// the renderer has, in both families. Header-only; pure.
#pragma once

#include "rules/plan.h"
#include "tests/unit/rules_fixtures.h"

namespace sb::rules::iptables::testing {

inline ServicePortPlan sample_service(const char* name, const char* cluster_ip, Protocol protocol) {
    ServicePortPlan p;
    p.ns = "default";
    p.service = name;
    p.port_name = "p";
    p.protocol = protocol;
    p.cluster_ips = {rules::testing::ip(cluster_ip)};
    p.port = 80;
    return p;
}

// default/dns (UDP, ITP Local, 10.96.0.53:80 -> 10.244.2.9:8080), default/empty
// (no endpoints, NodePort 30081), default/sctp, default/web (dual-stack,
// NodePort, external and LB IPs, source ranges, affinity, ETP Local), in
// plan order.
inline Plan sample_plan() {
    using rules::testing::endpoint;
    using rules::testing::ip;
    Plan plan;
    plan.node = "node-a";
    ServicePortPlan web = sample_service("web", "10.96.0.10", Protocol::kTCP);
    web.cluster_ips.push_back(ip("fd00:96::10"));
    web.node_port = 30080;
    web.external_ips = {ip("198.51.100.7")};
    web.load_balancer_ips = {ip("198.51.100.20"), ip("2001:db8:20::1")};
    web.load_balancer_source_ranges = {*Prefix::parse("203.0.113.0/24")};
    web.session_affinity.client_ip = true;
    web.session_affinity.timeout_seconds = 60;
    web.external_traffic_policy = TrafficPolicy::kLocal;
    web.cluster_endpoints = {endpoint("10.244.1.7", 8080, true),
                             endpoint("10.244.2.7", 8080, false),
                             endpoint("fd00:244:1::7", 8080, true)};
    web.local_endpoints = {web.cluster_endpoints[0], web.cluster_endpoints[2]};
    ServicePortPlan dns = sample_service("dns", "10.96.0.53", Protocol::kUDP);
    dns.internal_traffic_policy = TrafficPolicy::kLocal;
    dns.cluster_endpoints = {endpoint("10.244.2.9", 8080, false)};
    ServicePortPlan empty = sample_service("empty", "10.96.0.11", Protocol::kTCP);
    empty.node_port = 30081;
    ServicePortPlan sctp = sample_service("sctp", "10.96.0.12", Protocol::kSCTP);
    sctp.cluster_endpoints = {endpoint("10.244.1.8", 8080, true)};
    plan.services = {dns, empty, sctp, web};
    return plan;
}

}  // namespace sb::rules::iptables::testing
