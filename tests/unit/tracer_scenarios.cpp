// The scenario table of tracer_scenarios.h. Each scenario: what is
// rendered, then packets with the verdict every backend gives. Both
// backends render from rules/service_policy.h, so the rule is one Expected
// for both; the settled choices are in docs/nftables.md, "Service policy".
#include "tests/unit/tracer_scenarios.h"

#include <netinet/in.h>

namespace sb::rules::testing {

namespace {

const IpAddress kClusterIp = ip("10.96.0.10");
const IpAddress kClusterIp6 = ip("fd00:96::10");
const IpAddress kExternalIp = ip("198.51.100.7");
const IpAddress kLoadBalancerIp = ip("198.51.100.20");
const IpAddress kLoadBalancerIp6 = ip("2001:db8:20::20");
const IpAddress kDisallowed = ip("198.18.0.1");  // outside every source range below
const Destination kLocalTarget{ip("10.244.1.7"), 8080};
const Destination kRemoteTarget{ip("10.244.2.7"), 8080};

Packet from_node(IpAddress src, IpAddress dst, uint16_t port, uint8_t proto = IPPROTO_TCP) {
    return packet(src, dst, port, proto, true);
}

ServicePortPlan with_node_port(ServicePortPlan p, TrafficPolicy etp = TrafficPolicy::kCluster) {
    p.node_port = 30080;
    p.external_traffic_policy = etp;
    return p;
}

const std::vector<Destination> kV6Targets = {{ip("fd00:244:1::7"), 8080},
                                             {ip("fd00:244:2::7"), 8080}};

ServicePortPlan load_balancer(ServicePortPlan p, std::vector<Prefix> ranges) {
    p.load_balancer_ips = {kLoadBalancerIp};
    p.load_balancer_source_ranges = std::move(ranges);
    return p;
}

std::vector<Scenario> cluster_ip_scenarios() {
    ServicePortPlan udp = web(three_endpoints());
    udp.protocol = Protocol::kUDP;
    udp.port = 53;
    ServicePortPlan metrics = web({endpoint("10.244.1.7", 9091, true)});
    metrics.port_name = "metrics";
    metrics.port = 9090;
    BackendOptions all = options();
    all.masquerade_all = true;
    ServicePortPlan itp_local = web(three_endpoints());
    itp_local.internal_traffic_policy = TrafficPolicy::kLocal;
    ServicePortPlan itp_remote_only = web({endpoint("10.244.2.7", 8080, false)});
    itp_remote_only.internal_traffic_policy = TrafficPolicy::kLocal;
    return {
        {"ClusterIP TCP",
         {web(three_endpoints())},
         options(),
         {kNode, kNode6},
         {
             {"from a pod: every ready endpoint, uniformly, not masqueraded",
              packet(kPod, kClusterIp, 80), dnat_to(kAllTargets, false)},
             {"from outside the cluster CIDR: masqueraded", packet(kOutside, kClusterIp, 80),
              dnat_to(kAllTargets, true)},
             {"from the node itself (output hook): masqueraded", from_node(kNode, kClusterIp, 80),
              dnat_to(kAllTargets, true)},
             {"an endpoint reaching itself: masqueraded (hairpin)",
              packet(ip("10.244.1.7"), kClusterIp, 80), hairpin_to(kAllTargets)},
             {"traffic to a pod, not a service: untouched", packet(kPod, ip("10.244.2.7"), 8080),
              accepted()},
             {"another port of the cluster IP: rejected (kube-proxy's cluster-ips check)",
              packet(kPod, kClusterIp, 81), rejected()},
         }},
        {"ClusterIP UDP-only port",
         {udp},
         options(),
         {kNode, kNode6},
         {
             {"UDP from a pod: every endpoint", packet(kPod, kClusterIp, 53, IPPROTO_UDP),
              dnat_to(kAllTargets, false)},
             {"TCP to the UDP-only port: rejected", packet(kPod, kClusterIp, 53, IPPROTO_TCP),
              rejected()},
             {"from the node to a port no service uses: rejected",
              from_node(kNode, kClusterIp, 54, IPPROTO_UDP), rejected()},
         }},
        {"--masquerade-all",
         {web(three_endpoints())},
         all,
         {kNode, kNode6},
         {{"pod traffic is masqueraded too", packet(kPod, kClusterIp, 80),
           dnat_to(kAllTargets, true)}}},
        {"no cluster CIDR",
         {web(three_endpoints())},
         BackendOptions{},
         {kNode, kNode6},
         {{"nothing is masqueraded for coming from outside", packet(kOutside, kClusterIp, 80),
           dnat_to(kAllTargets, false)}}},
        {"a multi-port service",
         {web({endpoint("10.244.1.7", 8080, true)}), metrics},
         options(),
         {kNode, kNode6},
         {
             {"port 80 to its target port", packet(kPod, kClusterIp, 80),
              dnat_to({kLocalTarget}, false)},
             {"port 9090 to its target port", packet(kPod, kClusterIp, 9090),
              dnat_to({{ip("10.244.1.7"), 9091}}, false)},
         }},
        {"internalTrafficPolicy Local",
         {itp_local},
         options(),
         {kNode, kNode6},
         {{"cluster traffic to the local endpoints only", packet(kPod, kClusterIp, 80),
           dnat_to({kLocalTarget}, false)}}},
        {"internalTrafficPolicy Local without a local endpoint",
         {itp_remote_only},
         options(),
         {kNode, kNode6},
         {{"endpoints exist, the policy excludes them: dropped", packet(kPod, kClusterIp, 80),
           dropped()}}},
    };
}

std::vector<Scenario> node_port_scenarios() {
    ServicePortPlan cluster = with_node_port(web(three_endpoints()));
    ServicePortPlan local = with_node_port(web(three_endpoints()), TrafficPolicy::kLocal);
    BackendOptions limited = options();
    limited.nodeport_addresses = {prefix("192.168.1.0/24")};
    ServicePortPlan no_local =
        with_node_port(web({endpoint("10.244.2.7", 8080, false)}), TrafficPolicy::kLocal);
    no_local.external_ips = {kExternalIp};
    return {
        {"NodePort, externalTrafficPolicy Cluster",
         {cluster},
         options(),
         {kNode, kNode6},
         {
             {"from outside: every endpoint, masqueraded", packet(kOutside, kNode, 30080),
              dnat_to(kAllTargets, true)},
             {"the node reaching its own NodePort: masqueraded", from_node(kNode, kNode, 30080),
              dnat_to(kAllTargets, true)},
             {"127.0.0.1: iptables only (localhostNodePorts), masqueraded",
              from_node(ip("127.0.0.1"), ip("127.0.0.1"), 30080), accepted(),
              dnat_to(kAllTargets, true)},
             {"not on an address that is not the node's",
              packet(kOutside, ip("192.168.1.99"), 30080), accepted()},
         }},
        {"NodePort, externalTrafficPolicy Local",
         {local},
         options(),
         {kNode, kNode6},
         {
             {"from outside: local endpoints only, client address kept",
              packet(kOutside, kNode, 30080), dnat_to({kLocalTarget}, false)},
             {"from a pod: the cluster endpoints (short circuit)", packet(kPod, kNode, 30080),
              dnat_to(kAllTargets, false)},
             {"from the node itself: the cluster endpoints, masqueraded",
              from_node(kNode, kNode, 30080), dnat_to(kAllTargets, true)},
         }},
        {"--nodeport-addresses",
         {cluster},
         limited,
         {kNode, ip("172.16.0.10")},
         {
             {"a node address inside the prefixes", packet(kOutside, kNode, 30080),
              dnat_to(kAllTargets, true)},
             {"a node address outside them: untouched", packet(kOutside, ip("172.16.0.10"), 30080),
              accepted()},
         }},
        {"externalTrafficPolicy Local without a local endpoint",
         {no_local},
         options(),
         {kNode, kNode6},
         {
             {"NodePort from outside: dropped", packet(kOutside, kNode, 30080), dropped()},
             {"external IP from outside: dropped", packet(kOutside, kExternalIp, 80), dropped()},
             {"cluster traffic still works", packet(kPod, kClusterIp, 80),
              dnat_to({kRemoteTarget}, false)},
         }},
    };
}

std::vector<Scenario> external_scenarios() {
    ServicePortPlan none = with_node_port(web({}));
    none.external_ips = {kExternalIp};
    ServicePortPlan none_udp = none;
    none_udp.protocol = Protocol::kUDP;
    none_udp.port_name = "dns";
    ServicePortPlan external = web(three_endpoints());
    external.external_ips = {kExternalIp};
    ServicePortPlan local_affinity = external;
    local_affinity.external_traffic_policy = TrafficPolicy::kLocal;
    local_affinity.session_affinity.client_ip = true;
    ServicePortPlan dual = dual_stack(with_node_port(web(three_endpoints())));
    return {
        {"a service without endpoints",
         {none},
         options(),
         {kNode, kNode6},
         {
             {"ClusterIP from a pod: rejected", packet(kPod, kClusterIp, 80), rejected()},
             {"ClusterIP from the node: rejected", from_node(kNode, kClusterIp, 80), rejected()},
             {"NodePort: rejected", packet(kOutside, kNode, 30080), rejected()},
             {"external IP: rejected", packet(kOutside, kExternalIp, 80), rejected()},
             {"another port of the cluster IP: rejected", packet(kPod, kClusterIp, 81), rejected()},
         }},
        {"a UDP service without endpoints",
         {none_udp},
         options(),
         {kNode, kNode6},
         {{"rejected (port unreachable)", packet(kPod, kClusterIp, 80, IPPROTO_UDP), rejected()}}},
        {"external IPs, externalTrafficPolicy Cluster",
         {external},
         options(),
         {kNode, kNode6},
         {
             {"every endpoint, masqueraded", packet(kOutside, kExternalIp, 80),
              dnat_to(kAllTargets, true)},
             {"another port of the external IP: untouched", packet(kOutside, kExternalIp, 81),
              accepted()},
         }},
        {"an external IP, externalTrafficPolicy Local, ClientIP affinity",
         {local_affinity},
         options(),
         {kNode, kNode6},
         {
             {"from outside: the local endpoint", packet(kOutside, kExternalIp, 80),
              dnat_to({kLocalTarget}, false)},
             {"from a pod: every endpoint (short circuit)", packet(kPod, kExternalIp, 80),
              dnat_to(kAllTargets, false)},
         }},
        {"dual-stack ClusterIP and NodePort",
         {dual},
         options(),
         {kNode, kNode6},
         {
             {"IPv6 ClusterIP from a pod", packet(ip("fd00:244:0:1::9"), kClusterIp6, 80),
              dnat_to(kV6Targets, false)},
             {"IPv6 ClusterIP from outside: masqueraded", packet(kOutside6, kClusterIp6, 80),
              dnat_to(kV6Targets, true)},
             {"IPv6 NodePort", packet(kOutside6, kNode6, 30080), dnat_to(kV6Targets, true)},
             {"IPv4 NodePort", packet(kOutside, kNode, 30080), dnat_to(kAllTargets, true)},
             {"::1 is not a NodePort address", from_node(ip("::1"), ip("::1"), 30080), accepted()},
         }},
    };
}

std::vector<Scenario> source_range_scenarios() {
    const std::vector<Prefix> outside_only = {prefix("203.0.113.0/24")};
    // Holds kNode: the node's traffic to a VIP it holds comes from the VIP.
    const std::vector<Prefix> with_node = {prefix("203.0.113.0/24"), prefix("192.168.1.0/24")};
    BackendOptions node_known = options();
    node_known.node_ips = {kNode, kNode6};
    ServicePortPlan dual = dual_stack(load_balancer(web(three_endpoints()), outside_only));
    dual.load_balancer_ips.push_back(kLoadBalancerIp6);
    return {
        {"loadBalancerSourceRanges",
         {load_balancer(web(three_endpoints()), outside_only)},
         options(),
         {kNode, kNode6},
         {
             {"an allowed source: every endpoint, masqueraded",
              packet(kOutside, kLoadBalancerIp, 80), dnat_to(kAllTargets, true)},
             {"another source: dropped", packet(kDisallowed, kLoadBalancerIp, 80), dropped()},
             {"the ClusterIP is not subject to the ranges", packet(kDisallowed, kClusterIp, 80),
              dnat_to(kAllTargets, true)},
         }},
        {"a load balancer without source ranges",
         {load_balancer(web(three_endpoints()), {})},
         options(),
         {kNode, kNode6},
         {{"every source", packet(kDisallowed, kLoadBalancerIp, 80), dnat_to(kAllTargets, true)}}},
        {"a /0 source range allows every source (kube-proxy)",
         {load_balancer(web(three_endpoints()), {prefix("0.0.0.0/0")})},
         options(),
         {kNode, kNode6},
         {{"every source", packet(kDisallowed, kLoadBalancerIp, 80), dnat_to(kAllTargets, true)}}},
        {"source ranges of one family leave the other open (kube-proxy, per family)",
         {dual},
         options(),
         {kNode, kNode6},
         {
             {"IPv4: another source is dropped", packet(kDisallowed, kLoadBalancerIp, 80),
              dropped()},
             {"IPv6: no IPv6 range, every source", packet(kOutside6, kLoadBalancerIp6, 80),
              dnat_to(kV6Targets, true)},
         }},
        {"source ranges holding a node address admit the LB address itself",
         {load_balancer(web(three_endpoints()), with_node)},
         node_known,
         {kNode, kNode6, kLoadBalancerIp},
         {
             {"the node, its traffic to the VIP sourced from the VIP",
              from_node(kLoadBalancerIp, kLoadBalancerIp, 80), dnat_to(kAllTargets, true)},
             {"another source: dropped", packet(kDisallowed, kLoadBalancerIp, 80), dropped()},
         }},
        {"source ranges not holding a node address",
         {load_balancer(web(three_endpoints()), outside_only)},
         node_known,
         {kNode, kNode6, kLoadBalancerIp},
         {{"the VIP as a source is dropped", from_node(kLoadBalancerIp, kLoadBalancerIp, 80),
           dropped()}}},
        {"source ranges of a load balancer without endpoints",
         {load_balancer(web({}), outside_only)},
         options(),
         {kNode, kNode6},
         {
             {"an allowed source: rejected", packet(kOutside, kLoadBalancerIp, 80), rejected()},
             {"another source: dropped, the ranges come first",
              packet(kDisallowed, kLoadBalancerIp, 80), dropped()},
             {"the node, outside the ranges: dropped", from_node(kNode, kLoadBalancerIp, 80),
              dropped()},
         }},
    };
}

// kube-proxy's TestNodePorts (pkg/proxy/iptables/proxier_test.go):
// --iptables-localhost-nodeports with --nodeport-addresses, in iptables mode
// (the nftables backend never answers on loopback, as kube-proxy's nftables
// mode in 1.33/1.34). The guard's drop of a packet from elsewhere to
// 127.0.0.0/8 is iptables' too (nftables: the kernel's martian check).
std::vector<Scenario> localhost_node_port_scenarios() {
    ServicePortPlan cluster = with_node_port(web(three_endpoints()));
    ServicePortPlan local = with_node_port(web(three_endpoints()), TrafficPolicy::kLocal);
    BackendOptions off = options();
    off.localhost_node_ports = false;
    BackendOptions with_loopback = options();
    with_loopback.nodeport_addresses = {prefix("192.168.1.0/24"), prefix("127.0.0.1/32")};
    BackendOptions loopback_off = with_loopback;
    loopback_off.localhost_node_ports = false;
    BackendOptions without_loopback = options();
    without_loopback.nodeport_addresses = {prefix("192.168.1.0/24"), prefix("2001:db8::/64")};
    const Packet localhost = from_node(ip("127.0.0.1"), ip("127.0.0.1"), 30080);
    const Packet node = from_node(kNode, kNode, 30080);
    return {
        {"localhost NodePorts on (the default), externalTrafficPolicy Local",
         {local},
         options(),
         {kNode, kNode6},
         {
             {"127.0.0.1: the cluster endpoints, masqueraded", localhost, accepted(),
              dnat_to(kAllTargets, true)},
             {"127.0.0.1 from elsewhere, not a NodePort: dropped by the guard",
              packet(kOutside, ip("127.0.0.1"), 22), accepted(), dropped()},
             {"127.0.0.1 from the node's address, not a NodePort: dropped by the guard",
              from_node(kNode, ip("127.0.0.1"), 22), accepted(), dropped()},
             {"loopback to loopback, not a NodePort: untouched",
              from_node(ip("127.0.0.1"), ip("127.0.0.1"), 22), accepted()},
         }},
        {"localhost NodePorts off",
         {cluster},
         off,
         {kNode, kNode6},
         {
             {"127.0.0.1: untouched", localhost, accepted()},
             {"127.0.0.1 from elsewhere: no guard", packet(kOutside, ip("127.0.0.1"), 22),
              accepted()},
             {"the node address still", node, dnat_to(kAllTargets, true)},
         }},
        {"localhost NodePorts on, 127.0.0.1/32 in --nodeport-addresses",
         {cluster},
         with_loopback,
         {kNode, ip("172.16.0.10")},
         {
             {"127.0.0.1", localhost, accepted(), dnat_to(kAllTargets, true)},
             {"another loopback address: not in the prefixes",
              from_node(ip("127.0.0.1"), ip("127.0.0.2"), 30080), accepted()},
             {"a node address outside the prefixes: untouched",
              packet(kOutside, ip("172.16.0.10"), 30080), accepted()},
         }},
        {"localhost NodePorts off, 127.0.0.1/32 in --nodeport-addresses",
         {cluster},
         loopback_off,
         {kNode, kNode6},
         {
             {"127.0.0.1: untouched", localhost, accepted()},
             {"the node address still", packet(kOutside, kNode, 30080), dnat_to(kAllTargets, true)},
         }},
        {"localhost NodePorts on, --nodeport-addresses without loopback",
         {cluster},
         without_loopback,
         {kNode, kNode6},
         {
             {"127.0.0.1: untouched", localhost, accepted()},
             {"no guard", packet(kOutside, ip("127.0.0.1"), 22), accepted()},
             {"the node address", node, dnat_to(kAllTargets, true)},
         }},
        {"localhost NodePorts on, IPv6",
         {dual_stack(with_node_port(web(three_endpoints())))},
         options(),
         {kNode, kNode6},
         {
             {"::1: never", from_node(ip("::1"), ip("::1"), 30080), accepted()},
             {"::1 from elsewhere: no guard in IPv6", packet(kOutside6, ip("::1"), 22), accepted()},
             {"the IPv6 node address", from_node(kNode6, kNode6, 30080), dnat_to(kV6Targets, true)},
         }},
    };
}

}  // namespace

std::vector<Scenario> tracer_scenarios() {
    std::vector<Scenario> out;
    for (auto part : {cluster_ip_scenarios, node_port_scenarios, localhost_node_port_scenarios,
                      external_scenarios, source_range_scenarios}) {
        for (Scenario& s : part()) out.push_back(std::move(s));
    }
    return out;
}

}  // namespace sb::rules::testing
