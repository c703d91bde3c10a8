// The nftables backend over the shared tracer scenarios
// (tests/unit/tracer_scenarios.h), plus what only this backend's rule shapes
// show: the affinity map's updates and their timeout.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/nftables/render.h"
#include "tests/unit/tracer_scenarios.h"
#include "tracer.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using namespace sb::rules::nftables::testing;
using namespace sb::rules::testing;

namespace {

struct NftablesTracing {
    static constexpr TracedBackend kBackend = TracedBackend::kNftables;
    using Model = nftables::Model;
    using Tracer = nftables::testing::Tracer;

    static Model render(const std::vector<ServicePortPlan>& ports, const BackendOptions& o) {
        RenderResult r = nftables::render(plan_on_node_a(ports), o);
        REQUIRE(r.errors.empty());
        return std::move(r.model);
    }
    // One table serves both families.
    static Tracer tracer(const Model& model, IpFamily, std::vector<IpAddress> local) {
        return Tracer(model, std::move(local));
    }
};

}  // namespace

TEST_CASE("nftables: every tracer scenario") {
    run_tracer_scenarios<NftablesTracing>();
}

TEST_CASE("nftables: ClientIP affinity records the endpoint with the service's timeout") {
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity.client_ip = true;
    p.session_affinity.timeout_seconds = 2;
    const Model m = NftablesTracing::render({p}, options());
    Tracer tracer(m, {kNode});
    const auto outcomes = tracer.trace(packet(kPod, ip("10.96.0.10"), 80));
    require_uniform(outcomes, kAllTargets, false);
    for (const Outcome& o : outcomes) REQUIRE(o.affinity_updates.size() == 1);
    bool found = false;
    for (const auto& [name, chain] : m.chains) {
        for (const Rule& rule : chain.rules) {
            for (const Expr& e : rule) {
                if (e.kind == ExprKind::kAffinityUpdate) {
                    REQUIRE(e.value == 2);
                    found = true;
                }
            }
        }
    }
    REQUIRE(found);
}
