// The packet-tracer scenarios of every kernel backend, written once: a table
// of (plan, options, node addresses, packets) with the verdict each backend
// must give, run over each backend's tracer by run_tracer_scenarios(). A
// difference between backends is data in the table (an Expected per
// backend), never a second copy of a test. The table is in
// tracer_scenarios.cpp; the runner is a template over a "Tracing" adapter
// that each backend's test file supplies:
//
//   struct Tracing {
//       static constexpr TracedBackend kBackend;
//       using Model = ...;   // the backend's rendered model
//       using Tracer = ...;  // trace(Packet) -> outcomes, remember(outcome)
//       static Model render(const std::vector<ServicePortPlan>&, const BackendOptions&);
//       static Tracer tracer(const Model&, IpFamily, std::vector<IpAddress> local_addresses);
//   };
//
// Tests specific to one backend's rule shapes stay in that backend's file.
// No privileges.
#pragma once

#include <catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "rules/backend.h"
#include "rules/plan.h"
#include "tests/unit/rules_fixtures.h"

namespace sb::rules::testing {

enum class TracedBackend : uint8_t { kNftables, kIptables };

// A backend-independent verdict for a connection's first packet.
struct Expected {
    enum class Kind : uint8_t {
        kDnat,     // uniform over `targets`, masqueraded as `masquerade` says
        kHairpin,  // uniform over `targets`, masqueraded exactly when DNATed to the source
        kAccept,   // untouched (no DNAT, no masquerade)
        kDrop,
        kReject,
    };
    Kind kind = Kind::kAccept;
    std::vector<Destination> targets;
    bool masquerade = false;
};

inline Expected dnat_to(std::vector<Destination> targets, bool masquerade) {
    return {Expected::Kind::kDnat, std::move(targets), masquerade};
}
inline Expected hairpin_to(std::vector<Destination> targets) {
    return {Expected::Kind::kHairpin, std::move(targets), false};
}
inline Expected accepted() {
    return {Expected::Kind::kAccept, {}, false};
}
inline Expected dropped() {
    return {Expected::Kind::kDrop, {}, false};
}
inline Expected rejected() {
    return {Expected::Kind::kReject, {}, false};
}

// One packet and what each backend must do with it.
struct Check {
    std::string what;
    Packet packet;
    Expected nftables;
    Expected iptables;

    // The same verdict in every backend (the rule; a difference is the
    // exception and is documented in docs/).
    Check(std::string what_, Packet packet_, Expected both)
        : what(std::move(what_)), packet(std::move(packet_)), nftables(both), iptables(both) {}
    Check(std::string what_, Packet packet_, Expected nft, Expected ipt)
        : what(std::move(what_)),
          packet(std::move(packet_)),
          nftables(std::move(nft)),
          iptables(std::move(ipt)) {}

    const Expected& expected(TracedBackend backend) const {
        return backend == TracedBackend::kNftables ? nftables : iptables;
    }
};

struct Scenario {
    std::string name;
    std::vector<ServicePortPlan> ports;
    BackendOptions options = testing::options();
    // The node's own addresses (fib / addrtype LOCAL); loopback always is.
    std::vector<IpAddress> node_addresses = {kNode, kNode6};
    std::vector<Check> checks;
};

// The table (tracer_scenarios.cpp).
std::vector<Scenario> tracer_scenarios();

// Holds `outcomes` (every possible outcome of one packet) to `expected`.
template <class Outcome>
void require_expected(const std::vector<Outcome>& outcomes, const Expected& expected,
                      const Packet& packet) {
    switch (expected.kind) {
        case Expected::Kind::kDnat:
            require_uniform(outcomes, expected.targets, expected.masquerade);
            return;
        case Expected::Kind::kHairpin:
            REQUIRE(outcomes.size() == expected.targets.size());
            for (const Outcome& o : outcomes) {
                INFO(o.describe());
                REQUIRE(o.dnat);
                REQUIRE(std::find(expected.targets.begin(), expected.targets.end(), *o.dnat) !=
                        expected.targets.end());
                REQUIRE(o.probability ==
                        Approx(1.0 / static_cast<double>(expected.targets.size())));
                REQUIRE(o.masquerade == (o.dnat->first == packet.src));
            }
            return;
        case Expected::Kind::kAccept:
            REQUIRE(single_fate(outcomes) == Fate::kAccept);
            REQUIRE_FALSE(outcomes[0].masquerade);
            return;
        case Expected::Kind::kDrop:
            REQUIRE(single_fate(outcomes) == Fate::kDrop);
            return;
        case Expected::Kind::kReject:
            REQUIRE(single_fate(outcomes) == Fate::kReject);
            return;
    }
}

// ClientIP affinity: the endpoint an outcome recorded is chosen again for
// that client, and only for it.
template <class Tracing>
void check_affinity_sticks() {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity.client_ip = true;
    p.session_affinity.timeout_seconds = 2;
    const auto model = Tracing::render({p}, options());
    auto tracer = Tracing::tracer(model, IpFamily::kV4, {kNode});
    const Packet first = packet(kPod, ip("10.96.0.10"), 80);
    const auto outcomes = tracer.trace(first);
    require_uniform(outcomes, kAllTargets, false);
    const auto chosen = outcomes[1];
    tracer.remember(chosen);
    const auto again = tracer.trace(first);
    REQUIRE(again.size() == 1);
    REQUIRE(again[0].dnat == chosen.dnat);
    require_uniform(tracer.trace(packet(ip("10.244.1.99"), ip("10.96.0.10"), 80)), kAllTargets,
                    false);
}

// Every scenario of the table, then the shared checks of rules_fixtures.h,
// over the backend `Tracing` adapts.
template <class Tracing>
void run_tracer_scenarios() {
    for (const Scenario& s : tracer_scenarios()) {
        const auto model = Tracing::render(s.ports, s.options);
        for (const Check& c : s.checks) {
            INFO(s.name << ": " << c.what);
            auto tracer = Tracing::tracer(model, c.packet.dst.family(), s.node_addresses);
            require_expected(tracer.trace(c.packet), c.expected(Tracing::kBackend), c.packet);
        }
    }
    const auto trace = [](const std::vector<ServicePortPlan>& ports, const BackendOptions& o,
                          const Packet& p) {
        const auto model = Tracing::render(ports, o);
        return Tracing::tracer(model, p.dst.family(), {kNode, kNode6}).trace(p);
    };
    for (const LocalTrafficCase& c : local_traffic_cases()) check_local_traffic(c, trace);
    check_no_local_detector(LocalDetectMode::kNodeCidr, trace);
    check_no_local_detector(LocalDetectMode::kClusterCidr, trace);
    check_short_circuit_uses_cluster_endpoints(trace);
    check_local_policy_without_local_endpoints(trace);
    check_affinity_sticks<Tracing>();
}

}  // namespace sb::rules::testing
