// Fixtures shared by the unit tests of both kernel backends
// (tests/unit/nftables, tests/unit/iptables): plan-building helpers, the
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
    bool local_origin = false;  // sent by the node itself (output hook / OUTPUT)
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

}  // namespace sb::rules::testing
