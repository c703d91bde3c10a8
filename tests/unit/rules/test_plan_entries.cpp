// A Plan's shared entries (rules::ServicePorts) and the change set a partial
// replan carries (docs/planner.md, "Shared entries").
#include <catch.hpp>
#include <utility>

#include "rules/plan.h"
#include "rules/port_changes.h"

using namespace sb;
using namespace sb::rules;

namespace {

ServicePortPlan port(const std::string& service, uint16_t number) {
    ServicePortPlan p;
    p.ns = "default";
    p.service = service;
    p.port_name = "http";
    p.cluster_ips = {*IpAddress::parse("10.96.0.1")};
    p.port = number;
    return p;
}

Plan plan_of(std::initializer_list<const char*> services) {
    Plan plan;
    plan.revision = next_plan_revision();
    for (const char* service : services) plan.services.push_back(port(service, 80));
    return plan;
}

}  // namespace

TEST_CASE("a copied Plan shares its entries, and a write detaches only the written one") {
    const Plan first = plan_of({"a", "b", "c"});
    Plan second = first;
    CHECK(second.services.entry(0) == first.services.entry(0));
    second.services[1].port = 81;
    CHECK(first.services[1].port == 80);
    CHECK(second.services[1].port == 81);
    CHECK(second.services.entry(1) != first.services.entry(1));
    CHECK(second.services.entry(2) == first.services.entry(2));
    // A second write to the now unshared entry happens in place.
    const auto* detached = &std::as_const(second).services[1];
    second.services[1].port = 82;
    CHECK(&std::as_const(second).services[1] == detached);
    CHECK_FALSE(first == second);
}

TEST_CASE("Plan equality compares what a plan says, not how it was made") {
    Plan a = plan_of({"a"});
    Plan b = plan_of({"a"});
    CHECK(a.revision != b.revision);
    b.changes = PlanChanges{a.revision, {{"default", "a"}}};
    CHECK(a == b);
}

TEST_CASE(
    "changed_ports with a change set derived from the previous plan looks at its Services only") {
    const Plan previous = plan_of({"a", "b", "c", "d"});
    Plan plan = previous;
    plan.revision = next_plan_revision();
    plan.services[1].port = 8080;  // b changed, and is named
    plan.services[3].port = 9090;  // d changed, but not named: a change set is trusted
    plan.changes = PlanChanges{previous.revision, {{"default", "b"}, {"default", "x"}}};
    auto changed = changed_ports(previous, plan);
    REQUIRE(changed);
    REQUIRE(changed->size() == 1);
    CHECK((*changed)[0].first == &previous.services[1]);
    CHECK((*changed)[0].second->port == 8080);

    // Derived from another plan (a sync failed in between): both are walked.
    plan.changes->base_revision = previous.revision + 1000;
    changed = changed_ports(previous, plan);
    REQUIRE(changed);
    CHECK(changed->size() == 2);
}

TEST_CASE("changed_ports with a change set finds added and removed ports of a named Service") {
    const Plan previous = plan_of({"a", "c"});
    Plan plan;
    plan.revision = next_plan_revision();
    plan.services.push_back(previous.services.entry(0));
    plan.services.push_back(port("b", 80));
    plan.changes = PlanChanges{previous.revision, {{"default", "b"}, {"default", "c"}}};
    auto changed = changed_ports(previous, plan);
    REQUIRE(changed);
    REQUIRE(changed->size() == 2);
    CHECK((*changed)[0].first == nullptr);
    CHECK((*changed)[0].second->service == "b");
    CHECK((*changed)[1].first->service == "c");
    CHECK((*changed)[1].second == nullptr);
}
