// The iptables backend over the shared tracer scenarios
// (tests/unit/tracer_scenarios.h), plus what only this backend's rule shapes
// show: the `-m recent` lists and their timeout.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/iptables/render.h"
#include "tests/unit/tracer_scenarios.h"
#include "tracer.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::iptables;
using namespace sb::rules::iptables::testing;
using namespace sb::rules::testing;

namespace {

struct IptablesTracing {
    static constexpr TracedBackend kBackend = TracedBackend::kIptables;
    using Model = iptables::Model;
    using Tracer = iptables::testing::Tracer;

    static Model render(const std::vector<ServicePortPlan>& ports, const BackendOptions& o) {
        RenderResult r = iptables::render(plan_on_node_a(ports), o);
        REQUIRE(r.errors.empty());
        return std::move(r.model);
    }
    // The tables of the packet's family.
    static Tracer tracer(const Model& model, IpFamily family, std::vector<IpAddress> local) {
        return Tracer(family == IpFamily::kV4 ? model.v4 : model.v6, std::move(local));
    }
};

}  // namespace

TEST_CASE("iptables: every tracer scenario") {
    run_tracer_scenarios<IptablesTracing>();
}

TEST_CASE("iptables: ClientIP affinity sets a recent list, checked with the service's timeout") {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity.client_ip = true;
    p.session_affinity.timeout_seconds = 2;
    const Model m = IptablesTracing::render({p}, options());
    Tracer tracer(m.v4, {kNode});
    const auto outcomes = tracer.trace(packet(kPod, ip("10.96.0.10"), 80));
    require_uniform(outcomes, kAllTargets, false);
    for (const Outcome& o : outcomes) REQUIRE(o.recent_sets.size() == 1);
    // The checks carry the service's timeout; default 10800 s.
    auto timeouts = [](const Model& model) {
        std::vector<uint32_t> out;
        for (const auto& [name, chain] : model.v4.nat.chains) {
            for (const Rule& rule : chain.rules) {
                if (rule.recent == RecentKind::kCheck) out.push_back(rule.recent_seconds);
            }
        }
        return out;
    };
    REQUIRE(timeouts(m) == std::vector<uint32_t>{2, 2, 2});
    p.session_affinity.timeout_seconds = 0;
    REQUIRE(timeouts(IptablesTracing::render({p}, options())) ==
            std::vector<uint32_t>{10800, 10800, 10800});
}

// A --nodeport-addresses prefix holding 127.0.0.0/8 and more: loopback is
// cut out unless localhost NodePorts are on (kube-proxy: 0.0.0.0/0 is "every
// address", `! -d 127.0.0.0/8` when off).
TEST_CASE("iptables: --nodeport-addresses 0.0.0.0/0 takes loopback only when localhost is on") {
    ServicePortPlan p = web(three_endpoints());
    p.node_port = 30080;
    BackendOptions o = options();
    o.nodeport_addresses = {*Prefix::parse("0.0.0.0/0")};
    const Packet localhost = packet(ip("127.0.0.1"), ip("127.0.0.1"), 30080, IPPROTO_TCP, true);
    const Packet node = packet(kNode, kNode, 30080, IPPROTO_TCP, true);
    for (const bool on : {true, false}) {
        INFO("localhost NodePorts " << (on ? "on" : "off"));
        o.localhost_node_ports = on;
        const Model m = IptablesTracing::render({p}, o);
        Tracer tracer(m.v4, {kNode});
        require_uniform(tracer.trace(node), kAllTargets, true);
        const auto outcomes = tracer.trace(localhost);
        if (on) {
            require_uniform(outcomes, kAllTargets, true);
        } else {
            REQUIRE(outcomes.size() == 1);
            INFO(outcomes[0].describe());
            REQUIRE(outcomes[0].fate == Fate::kAccept);
            REQUIRE_FALSE(outcomes[0].dnat);
        }
    }
}
