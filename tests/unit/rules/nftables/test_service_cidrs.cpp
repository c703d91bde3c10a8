// Unallocated ClusterIPs (Plan::service_cidrs): the verdicts of kube-proxy's
// nftables proxier_test.go (TestClusterIPGeneral: "TCP-only port does not
// match UDP traffic" and "svc1 does not accept svc2's ports" -> REJECT,
// "packet to unallocated cluster ip" -> DROP) over the packet tracer, with
// this project's addresses; what happens without a ServiceCIDR; the CIDRs
// that are refused; and a ServiceCIDR change sent as one chain's rules.
#include <netinet/in.h>
#include <catch.hpp>

#include <string>
#include <vector>

#include "rules/nftables/diff.h"
#include "rules/nftables/nftables_backend.h"
#include "rules/nftables/render.h"
#include "tests/unit/fake_conntrack.h"
#include "tests/unit/rules/nftables/fake_channel.h"
#include "tests/unit/rules_fixtures.h"
#include "tracer.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using namespace sb::rules::nftables::testing;
using namespace sb::rules::testing;

namespace {

// default/web: 10.96.0.10 and fd00:96::10, port 80/TCP, three endpoints.
Plan web_plan(std::vector<Prefix> cidrs) {
    Plan plan = plan_on_node_a({dual_stack(web(three_endpoints()))});
    plan.service_cidrs = std::move(cidrs);
    plan.revision = next_plan_revision();
    return plan;
}

const std::vector<Prefix> kBothCidrs = {prefix("10.96.0.0/16"), prefix("fd00:96::/112")};

// The one fate of `packet` under `plan` (the endpoint choice aside).
Fate fate_of(const Plan& plan, const Packet& packet) {
    RenderResult r = render(plan, options());
    REQUIRE(r.errors.empty());
    Tracer tracer(r.model, {kNode, kNode6});
    const auto outcomes = tracer.trace(packet);
    REQUIRE_FALSE(outcomes.empty());
    for (const Outcome& o : outcomes) {
        INFO(o.describe());
        REQUIRE(o.fate == outcomes.front().fate);
    }
    return outcomes.front().fate;
}

Packet from_node(IpAddress dst, uint16_t port) {
    return packet(kNode, dst, port, IPPROTO_TCP, true);
}

}  // namespace

TEST_CASE("service CIDRs: kube-proxy's ClusterIP verdicts") {
    const Plan plan = web_plan(kBothCidrs);
    SECTION("the Service's own port is DNATed") {
        RenderResult r = render(plan, options());
        Tracer tracer(r.model, {kNode});
        require_uniform(tracer.trace(packet(kPod, ip("10.96.0.10"), 80)), kAllTargets, false);
    }
    SECTION("a TCP-only port does not match UDP traffic: rejected") {
        CHECK(fate_of(plan, packet(kPod, ip("10.96.0.10"), 80, IPPROTO_UDP)) == Fate::kReject);
    }
    SECTION("a port the Service does not have: rejected") {
        CHECK(fate_of(plan, packet(kPod, ip("10.96.0.10"), 443)) == Fate::kReject);
        CHECK(fate_of(plan, packet(kPod6, ip("fd00:96::10"), 443)) == Fate::kReject);
    }
    SECTION("an address of a service CIDR no Service holds: dropped") {
        CHECK(fate_of(plan, packet(kPod, ip("10.96.0.50"), 80)) == Fate::kDrop);
        CHECK(fate_of(plan, packet(kPod, ip("10.96.255.254"), 53, IPPROTO_UDP)) == Fate::kDrop);
        CHECK(fate_of(plan, packet(kPod6, ip("fd00:96::50"), 80)) == Fate::kDrop);
        // From the node itself too (filter output after DNAT, as kube-proxy).
        CHECK(fate_of(plan, from_node(ip("10.96.0.50"), 80)) == Fate::kDrop);
        // And from outside the cluster, routed through the node.
        CHECK(fate_of(plan, packet(kOutside, ip("10.96.0.50"), 80)) == Fate::kDrop);
    }
    SECTION("an address outside every service CIDR is not touched") {
        CHECK(fate_of(plan, packet(kPod, ip("10.97.0.50"), 80)) == Fate::kAccept);
        CHECK(fate_of(plan, packet(kPod6, ip("fd00:97::50"), 80)) == Fate::kAccept);
        CHECK(fate_of(plan, from_node(ip("10.95.255.255"), 80)) == Fate::kAccept);
    }
}

TEST_CASE("service CIDRs: without a ServiceCIDR nothing is dropped") {
    const Plan plan = web_plan({});
    CHECK(fate_of(plan, packet(kPod, ip("10.96.0.50"), 80)) == Fate::kAccept);
    CHECK(fate_of(plan, from_node(ip("10.96.0.50"), 80)) == Fate::kAccept);
    // The unknown port of a ClusterIP is rejected whatever the CIDRs.
    CHECK(fate_of(plan, packet(kPod, ip("10.96.0.10"), 443)) == Fate::kReject);
    RenderResult r = render(plan, options());
    REQUIRE(r.model.chains.count(kUnallocatedClusterIps) == 1);
    CHECK(r.model.chains.at(kUnallocatedClusterIps).rules.empty());
}

TEST_CASE("service CIDRs: each family's CIDR drops that family only") {
    const Plan v4_only = web_plan({prefix("10.96.0.0/16")});
    CHECK(fate_of(v4_only, packet(kPod, ip("10.96.0.50"), 80)) == Fate::kDrop);
    CHECK(fate_of(v4_only, packet(kPod6, ip("fd00:96::50"), 80)) == Fate::kAccept);
    const Plan v6_only = web_plan({prefix("fd00:96::/112")});
    CHECK(fate_of(v6_only, packet(kPod, ip("10.96.0.50"), 80)) == Fate::kAccept);
    CHECK(fate_of(v6_only, packet(kPod6, ip("fd00:96::50"), 80)) == Fate::kDrop);
}

TEST_CASE("service CIDRs: one overlapping loopback or link-local is refused, naming it") {
    for (const char* bad : {"127.0.0.0/8", "127.0.0.0/16", "0.0.0.0/0", "169.254.0.0/16",
                            "169.0.0.0/8", "::/0", "::1/128", "fe80::/64"}) {
        INFO(bad);
        Plan plan = web_plan({prefix(bad), prefix("10.96.0.0/16")});
        RenderResult r = render(plan, options());
        REQUIRE(r.errors.size() == 1);
        CHECK(r.errors[0].find(bad) != std::string::npos);
        // The good one still applies; the refused one drops nothing.
        Tracer tracer(r.model, {kNode, kNode6});
        CHECK(tracer.trace(packet(kPod, ip("10.96.0.50"), 80)).front().fate == Fate::kDrop);
        CHECK(tracer.trace(from_node(ip("127.0.0.1"), 80)).front().fate == Fate::kAccept);
        CHECK(tracer.trace(packet(kPod, ip("169.254.20.10"), 53)).front().fate == Fate::kAccept);
    }
}

TEST_CASE("service CIDRs: a change rewrites the one chain and nothing else") {
    RenderResult before = render(web_plan({}), options());
    const Fragment old_cidrs = render_service_cidrs({}, nullptr);
    const Fragment new_cidrs = render_service_cidrs(kBothCidrs, nullptr);
    Model model = before.model;
    const Delta delta = update_model(model, {{&old_cidrs, &new_cidrs}});
    CHECK(delta.flush_chains == std::vector<std::string>{kUnallocatedClusterIps});
    CHECK(delta.fill_chains == std::vector<std::string>{kUnallocatedClusterIps});
    CHECK(delta.add_elements.empty());
    CHECK(delta.del_elements.empty());
    CHECK(delta.flush_sets.empty());
    CHECK(delta.add_chains.empty());
    CHECK(delta.del_chains.empty());
    CHECK(to_nft_text(model) == to_nft_text(render(web_plan(kBothCidrs), options()).model));
}

TEST_CASE("service CIDRs: the backend sends a ServiceCIDR change incrementally") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = web_plan({});
    REQUIRE(backend->sync(before, nullptr));
    // As the planner derives it: no Service changed, the CIDRs did.
    Plan after = before;
    after.service_cidrs = kBothCidrs;
    after.revision = next_plan_revision();
    after.changes = PlanChanges{before.revision, {}};
    auto stats = backend->sync(after, &before);
    REQUIRE(stats);
    CHECK_FALSE(stats->full);
    CHECK(stats->objects_sent == 3);  // the chain and its two rules
    REQUIRE(kernel.table() != nullptr);
    CHECK(kernel_text(*kernel.table()) == kernel_text(render(after, options()).model));
    // And back: the chain is emptied, no rule drops anything.
    Plan emptied = before;
    emptied.revision = next_plan_revision();
    emptied.changes = PlanChanges{after.revision, {}};
    REQUIRE(backend->sync(emptied, &after));
    CHECK(kernel_text(*kernel.table()) == kernel_text(render(before, options()).model));
}
