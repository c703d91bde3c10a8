// Fixtures shared by the unit tests of both kernel backends
// (tests/unit/rules/nftables, tests/unit/rules/iptables): plan-building helpers, the
// packet and outcome vocabulary of their packet tracers, and the checks over
// traced outcomes. Each backend keeps its own Tracer (the rule evaluation
// differs); its Outcome must have fate, dnat, masquerade, probability,
// chains and describe(). Header-only; every function is pure.
#pragma once

#include <netinet/in.h>
#include <catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "base/ip.h"
#include "rules/backend.h"
#include "rules/plan.h"

namespace sb::rules::testing {

// The first packet of a connection.
struct Packet {
    IpAddress src;
    IpAddress dst;
    uint8_t proto = IPPROTO_TCP;
    uint16_t dport = 0;
    uint16_t sport = 0;         // only the notrack rules of answers read it
    bool local_origin = false;  // sent by the node itself (output hook / OUTPUT)
    // The interface a packet arriving at the node comes in on; ignored for
    // local_origin packets, which have none (the tracers use "").
    std::string iif = "eth0";
};

enum class Fate : uint8_t { kAccept, kDrop, kReject };

using Destination = std::pair<IpAddress, uint16_t>;  // a DNAT target

template <class Outcome>
std::string describe_outcome(const Outcome& o) {
    std::string out = o.fate == Fate::kAccept ? "accept"
                      : o.fate == Fate::kDrop ? "drop"
                                              : "reject";
    if (o.dnat) out += fmt::format(" dnat {}:{}", o.dnat->first.to_string(), o.dnat->second);
    if (o.masquerade) out += " masquerade";
    out += fmt::format(" p={:.3f} via", o.probability);
    for (const std::string& c : o.chains) out += " " + c;
    return out;
}

// Adds `o` to `out`, summing its probability into an outcome of the same
// fate, DNAT target and masquerade when there is one.
template <class Outcome>
void merge_outcome(std::vector<Outcome>& out, Outcome o) {
    auto same = std::find_if(out.begin(), out.end(), [&](const Outcome& x) {
        return x.fate == o.fate && x.dnat == o.dnat && x.masquerade == o.masquerade;
    });
    if (same != out.end()) {
        same->probability += o.probability;
    } else {
        out.push_back(std::move(o));
    }
}

inline IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}
inline Prefix prefix(const char* text) {
    return *Prefix::parse(text);
}

inline const IpAddress kNode = ip("192.168.1.10");
inline const IpAddress kNode6 = ip("fd00:1::10");
inline const IpAddress kPod = ip("10.244.1.5");       // a pod on this node, not an endpoint
inline const IpAddress kOutside = ip("203.0.113.5");  // a client outside the cluster
inline const IpAddress kOutside6 = ip("2001:db8::5");

inline Endpoint endpoint(const char* address, uint16_t port, bool local) {
    Endpoint e;
    e.ip = ip(address);
    e.port = port;
    e.ready = e.serving = true;
    e.is_local = local;
    e.node_name = local ? "node-a" : "node-b";
    return e;
}

// default/web:http on ClusterIP 10.96.0.10:80 with `endpoints` (the local
// ones also as local endpoints).
inline ServicePortPlan web(std::vector<Endpoint> endpoints) {
    ServicePortPlan p;
    p.ns = "default";
    p.service = "web";
    p.port_name = "http";
    p.cluster_ips = {ip("10.96.0.10")};
    p.port = 80;
    for (const Endpoint& e : endpoints) {
        p.cluster_endpoints.push_back(e);
        if (e.is_local) p.local_endpoints.push_back(e);
    }
    return p;
}

inline std::vector<Endpoint> three_endpoints() {
    return {endpoint("10.244.1.7", 8080, true), endpoint("10.244.2.7", 8080, false),
            endpoint("10.244.3.7", 8080, false)};
}

// The DNAT targets of three_endpoints().
inline const std::vector<Destination> kAllTargets = {
    {ip("10.244.1.7"), 8080}, {ip("10.244.2.7"), 8080}, {ip("10.244.3.7"), 8080}};

inline BackendOptions options() {
    BackendOptions o;
    o.cluster_cidrs = {prefix("10.244.0.0/16"), prefix("fd00:244::/48")};
    return o;
}

inline Plan plan_on_node_a(std::vector<ServicePortPlan> ports) {
    Plan plan;
    plan.node = "node-a";
    plan.services = std::move(ports);
    return plan;
}

inline Packet packet(IpAddress src, IpAddress dst, uint16_t port, uint8_t proto = IPPROTO_TCP,
                     bool local_origin = false) {
    Packet p;
    p.src = src;
    p.dst = dst;
    p.dport = port;
    p.proto = proto;
    p.local_origin = local_origin;
    return p;
}

// `p` arriving on the interface `iif`.
inline Packet arriving_on(Packet p, const char* iif) {
    p.iif = iif;
    return p;
}

// Every outcome is a DNAT to one of `targets`, each with probability 1/n.
template <class Outcome>
void require_uniform(const std::vector<Outcome>& outcomes, std::vector<Destination> targets,
                     bool masquerade) {
    INFO(outcomes.size() << " outcomes; first: "
                         << (outcomes.empty() ? "" : outcomes[0].describe()));
    REQUIRE(outcomes.size() == targets.size());
    for (const Outcome& o : outcomes) {
        INFO(o.describe());
        REQUIRE(o.fate == Fate::kAccept);
        REQUIRE(o.dnat);
        REQUIRE(std::find(targets.begin(), targets.end(), *o.dnat) != targets.end());
        REQUIRE(o.probability == Approx(1.0 / static_cast<double>(targets.size())));
        REQUIRE(o.masquerade == masquerade);
    }
}

// The fate of the only outcome, which must not DNAT.
template <class Outcome>
Fate single_fate(const std::vector<Outcome>& outcomes) {
    REQUIRE(outcomes.size() == 1);
    INFO(outcomes[0].describe());
    REQUIRE_FALSE(outcomes[0].dnat);
    return outcomes[0].fate;
}

// ---- --detect-local-mode, held to the same behaviour in both backends ----

// Where a connection's first packet comes from.
struct Origin {
    IpAddress src;
    std::string iif;
};

// A detector configuration and packets it must (not) classify as local.
struct LocalTrafficCase {
    std::string name;
    BackendOptions options;
    std::vector<Origin> local;
    std::vector<Origin> not_local;
};

inline BackendOptions detect_local(LocalDetectMode mode, std::vector<Prefix> cidrs,
                                   std::string interface = {}) {
    BackendOptions o;
    o.local_detect_mode = mode;
    o.cluster_cidrs = std::move(cidrs);
    o.local_interface = std::move(interface);
    return o;
}

// `o` detecting local traffic by interface (`mode` is kBridgeInterface or
// kInterfaceNamePrefix).
inline BackendOptions by_interface(BackendOptions o, LocalDetectMode mode, std::string name) {
    o.local_detect_mode = mode;
    o.local_interface = std::move(name);
    return o;
}

inline const IpAddress kPod6 = ip("fd00:244:1::5");           // a pod on this node
inline const IpAddress kOtherNodePod = ip("10.244.2.9");      // a pod on node-b
inline const IpAddress kOtherNodePod6 = ip("fd00:244:2::9");  // a pod on node-b

// Every mode. The CIDR modes decide by source address whatever the
// interface; the interface modes by the input interface whatever the
// address. NodeCIDR's prefixes are this node's podCIDRs, so node-b's pods
// are not local there (they are under ClusterCIDR's cluster-wide prefix).
inline std::vector<LocalTrafficCase> local_traffic_cases() {
    using M = LocalDetectMode;
    return {
        {"ClusterCIDR",
         detect_local(M::kClusterCidr, {prefix("10.244.0.0/16"), prefix("fd00:244::/40")}),
         {{kPod, "cbr0"}, {kOtherNodePod, "eth0"}, {kPod6, "eth0"}},
         {{kOutside, "cbr0"}, {kOutside6, "eth0"}}},
        {"NodeCIDR",
         detect_local(M::kNodeCidr, {prefix("10.244.1.0/24"), prefix("fd00:244:1::/48")}),
         {{kPod, "eth0"}, {kPod6, "cbr0"}},
         {{kOtherNodePod, "eth0"}, {kOtherNodePod6, "eth0"}, {kOutside, "cbr0"}}},
        {"BridgeInterface",
         detect_local(M::kBridgeInterface, {prefix("10.244.0.0/16")}, "cbr0"),
         {{kPod, "cbr0"}, {kOutside, "cbr0"}, {kPod6, "cbr0"}},
         {{kPod, "eth0"}, {kPod, "cbr01"}, {kPod, "cbr"}, {kPod6, "eth0"}}},
        {"InterfaceNamePrefix",
         detect_local(M::kInterfaceNamePrefix, {prefix("10.244.0.0/16")}, "veth"),
         {{kPod, "veth1x2"}, {kPod, "veth"}, {kOutside, "vethabc"}, {kPod6, "veth0"}},
         {{kPod, "cbr0"}, {kPod, "vet"}, {kPod, "eth0"}, {kPod6, "eth0"}}},
    };
}

// `p` with the IPv6 ClusterIP fd00:96::10 and two IPv6 endpoints on port
// 8080: fd00:244:1::7 (local) and fd00:244:2::7.
inline ServicePortPlan dual_stack(ServicePortPlan p) {
    p.cluster_ips.push_back(ip("fd00:96::10"));
    const Endpoint v6a = endpoint("fd00:244:1::7", 8080, true);
    const Endpoint v6b = endpoint("fd00:244:2::7", 8080, false);
    p.cluster_endpoints.push_back(v6a);
    p.cluster_endpoints.push_back(v6b);
    p.local_endpoints.push_back(v6a);
    return p;
}

// default/web:http, dual-stack, with NodePort 30080 under
// externalTrafficPolicy Local: ClusterIPs 10.96.0.10 and fd00:96::10, one
// local and two remote endpoints in IPv4, one of each in IPv6.
inline ServicePortPlan dual_stack_local_policy_web() {
    ServicePortPlan p = dual_stack(web(three_endpoints()));
    p.node_port = 30080;
    p.external_traffic_policy = TrafficPolicy::kLocal;
    return p;
}

// The detector decides (kube-proxy's two uses): ClusterIP traffic that is not
// local is masqueraded; local traffic to a NodePort under
// externalTrafficPolicy Local is short-circuited to every endpoint. The
// node's own traffic is never local (no input interface, not a pod address):
// masqueraded to a ClusterIP; to its NodePort it takes every endpoint,
// masqueraded (kube-proxy's `fib saddr type local` rules). `trace(ports,
// options, packet)` renders with the backend under test and traces.
template <class Trace>
void check_local_traffic(const LocalTrafficCase& c, const Trace& trace) {
    for (const bool affinity : {false, true}) {
        ServicePortPlan p = dual_stack_local_policy_web();
        p.session_affinity.client_ip = affinity;
        const std::vector<ServicePortPlan> ports{p};
        auto all = [&](IpFamily f) {
            std::vector<Destination> out;
            for (const Endpoint& e : p.cluster_endpoints) {
                if (e.ip.family() == f) out.emplace_back(e.ip, e.port);
            }
            return out;
        };
        auto local_only = [&](IpFamily f) {
            std::vector<Destination> out;
            for (const Endpoint& e : p.local_endpoints) {
                if (e.ip.family() == f) out.emplace_back(e.ip, e.port);
            }
            return out;
        };
        auto cluster_ip = [](IpFamily f) {
            return f == IpFamily::kV4 ? ip("10.96.0.10") : ip("fd00:96::10");
        };
        auto node = [](IpFamily f) { return f == IpFamily::kV4 ? kNode : kNode6; };
        auto from = [](const Origin& o, IpAddress dst, uint16_t port) {
            return arriving_on(packet(o.src, dst, port), o.iif.c_str());
        };
        for (const bool local : {true, false}) {
            for (const Origin& o : local ? c.local : c.not_local) {
                const IpFamily f = o.src.family();
                INFO(c.name << (affinity ? " with affinity: " : ": ") << o.src.to_string() << " on "
                            << o.iif << (local ? " is local" : " is not local"));
                require_uniform(trace(ports, c.options, from(o, cluster_ip(f), 80)), all(f),
                                !local);
                require_uniform(trace(ports, c.options, from(o, node(f), 30080)),
                                local ? all(f) : local_only(f), false);
                BackendOptions masquerade_all = c.options;
                masquerade_all.masquerade_all = true;
                require_uniform(trace(ports, masquerade_all, from(o, cluster_ip(f), 80)), all(f),
                                true);
            }
        }
        for (const IpFamily f : {IpFamily::kV4, IpFamily::kV6}) {
            INFO(c.name << (affinity ? " with affinity" : "") << ": the node itself");
            require_uniform(
                trace(ports, c.options, packet(node(f), cluster_ip(f), 80, IPPROTO_TCP, true)),
                all(f), true);
            require_uniform(
                trace(ports, c.options, packet(node(f), node(f), 30080, IPPROTO_TCP, true)), all(f),
                true);
        }
    }
}

// kube-proxy's short circuit is "subject to neither form of traffic policy":
// local traffic and the node's own traffic to an external address of an
// externalTrafficPolicy Local service take the cluster endpoints, also under
// internalTrafficPolicy Local. `trace` as for check_local_traffic().
template <class Trace>
void check_short_circuit_uses_cluster_endpoints(const Trace& trace) {
    for (const bool affinity : {false, true}) {
        INFO((affinity ? "with affinity" : "without affinity"));
        ServicePortPlan p = web(three_endpoints());
        p.node_port = 30080;
        p.external_ips = {ip("198.51.100.7")};
        p.external_traffic_policy = TrafficPolicy::kLocal;
        p.internal_traffic_policy = TrafficPolicy::kLocal;
        p.session_affinity.client_ip = affinity;
        const std::vector<ServicePortPlan> ports{p};
        const BackendOptions o = options();
        for (const auto& [dst, port] :
             {std::pair{kNode, uint16_t{30080}}, std::pair{ip("198.51.100.7"), uint16_t{80}}}) {
            INFO(dst.to_string());
            require_uniform(trace(ports, o, packet(kPod, dst, port)), kAllTargets, false);
            require_uniform(trace(ports, o, packet(kNode, dst, port, IPPROTO_TCP, true)),
                            kAllTargets, true);
            require_uniform(trace(ports, o, packet(kOutside, dst, port)),
                            {{ip("10.244.1.7"), 8080}}, false);
        }
        // ClusterIP traffic keeps the internal policy.
        require_uniform(trace(ports, o, packet(kPod, ip("10.96.0.10"), 80)),
                        {{ip("10.244.1.7"), 8080}}, false);
    }
}

// externalTrafficPolicy Local without a local endpoint: external traffic is
// dropped, but local traffic still takes the short circuit to the cluster
// endpoints (kube-proxy). Without any endpoint, a Local policy rejects like
// Cluster does: DROP only says "endpoints exist, the policy excludes them".
template <class Trace>
void check_local_policy_without_local_endpoints(const Trace& trace) {
    for (const bool affinity : {false, true}) {
        INFO((affinity ? "with affinity" : "without affinity"));
        ServicePortPlan p = web({endpoint("10.244.2.7", 8080, false)});
        p.node_port = 30080;
        p.external_ips = {ip("198.51.100.7")};
        p.external_traffic_policy = TrafficPolicy::kLocal;
        p.session_affinity.client_ip = affinity;
        const BackendOptions o = options();
        for (const auto& [dst, port] :
             {std::pair{kNode, uint16_t{30080}}, std::pair{ip("198.51.100.7"), uint16_t{80}}}) {
            INFO(dst.to_string());
            require_uniform(trace(std::vector{p}, o, packet(kPod, dst, port)),
                            {{ip("10.244.2.7"), 8080}}, false);
            REQUIRE(single_fate(trace(std::vector{p}, o, packet(kOutside, dst, port))) ==
                    Fate::kDrop);
        }
        require_uniform(trace(std::vector{p}, o, packet(kNode, kNode, 30080, IPPROTO_TCP, true)),
                        {{ip("10.244.2.7"), 8080}}, true);

        ServicePortPlan none = p;
        none.cluster_endpoints.clear();
        none.internal_traffic_policy = TrafficPolicy::kLocal;
        for (const auto& [dst, port] :
             {std::pair{kNode, uint16_t{30080}}, std::pair{ip("198.51.100.7"), uint16_t{80}},
              std::pair{ip("10.96.0.10"), uint16_t{80}}}) {
            INFO("no endpoints: " << dst.to_string());
            REQUIRE(single_fate(trace(std::vector{none}, o, packet(kOutside, dst, port))) ==
                    Fate::kReject);
            REQUIRE(single_fate(trace(std::vector{none}, o, packet(kPod, dst, port))) ==
                    Fate::kReject);
        }
    }
}

// The no-op detector (ClusterCIDR or NodeCIDR without a prefix of the
// family): nothing is masqueraded for not being local, nothing is
// short-circuited.
template <class Trace>
void check_no_local_detector(LocalDetectMode mode, const Trace& trace) {
    const std::vector<ServicePortPlan> ports{dual_stack_local_policy_web()};
    const BackendOptions o = detect_local(mode, {});
    for (const IpAddress& src : {kPod, kOutside}) {
        INFO(src.to_string());
        require_uniform(trace(ports, o, arriving_on(packet(src, ip("10.96.0.10"), 80), "cbr0")),
                        kAllTargets, false);
        require_uniform(trace(ports, o, arriving_on(packet(src, kNode, 30080), "cbr0")),
                        {{ip("10.244.1.7"), 8080}}, false);
    }
}

}  // namespace sb::rules::testing
