// What the daemon reports to DNS around its syncs (proxy/sync/programmed_names.h):
// withdrawals before a sync, additions after an accepted one, nothing new
// after a failed one.
#include <catch.hpp>

#include "proxy/sync/programmed_names.h"

using namespace sb;
using namespace sb::proxy;

namespace {

rules::ServicePortPlan port(const std::string& service, const std::string& name, uint16_t number,
                            std::vector<const char*> ips = {"10.96.0.1"}) {
    rules::ServicePortPlan p;
    p.ns = "default";
    p.service = service;
    p.port_name = name;
    p.port = number;
    for (const char* text : ips) p.cluster_ips.push_back(*IpAddress::parse(text));
    return p;
}

rules::Plan plan_of(std::vector<rules::ServicePortPlan> ports) {
    rules::Plan plan;
    plan.revision = rules::next_plan_revision();
    for (auto& p : ports) plan.services.push_back(std::move(p));
    return plan;
}

// `base` with the Services `changed` replanned to `ports`' entries for them.
rules::Plan derived(const rules::Plan& base, std::vector<std::string> changed,
                    std::vector<rules::ServicePortPlan> ports) {
    rules::Plan plan = plan_of(std::move(ports));
    plan.changes.emplace();
    plan.changes->base_revision = base.revision;
    for (const auto& name : changed) plan.changes->services.emplace_back("default", name);
    return plan;
}

// The report as "name: ports" strings ("name: -" when withdrawn whole).
std::vector<std::string> summary(const dns::ProgrammedChanges& changes) {
    std::vector<std::string> out;
    for (const auto& [key, state] : changes) {
        std::string line = key.name + ":";
        if (!state) {
            line += " -";
        } else {
            for (const auto& p : state->ports) line += " " + p.name;
            line += " @" + std::to_string(state->cluster_ips.size());
        }
        out.push_back(line);
    }
    return out;
}

using Lines = std::vector<std::string>;

}  // namespace

TEST_CASE("programmed names: a Service is reported once its first sync is accepted") {
    ProgrammedNames names;
    auto first = plan_of({port("a", "http", 80), port("a", "https", 443), port("b", "", 53)});
    CHECK(names.before_sync(first).empty());  // the kernel serves nothing yet
    CHECK(summary(names.after_sync(first)) == Lines{"a: http https @1", "b:  @1"});
    // The same plan again changes nothing.
    CHECK(names.before_sync(first).empty());
    CHECK(names.after_sync(first).empty());
}

TEST_CASE("programmed names: what a plan drops is withdrawn before its sync") {
    ProgrammedNames names;
    auto first = plan_of({port("a", "http", 80), port("a", "https", 443), port("b", "", 53)});
    names.before_sync(first);
    names.after_sync(first);
    // a loses https, b goes, c comes: before the sync only the losses.
    auto second = derived(first, {"a", "b", "c"}, {port("a", "http", 80), port("c", "", 9)});
    CHECK(summary(names.before_sync(second)) == Lines{"a: http @1", "b: -"});
    CHECK(summary(names.after_sync(second)) == Lines{"c:  @1"});
}

TEST_CASE("programmed names: a failed sync publishes nothing; the retry does") {
    ProgrammedNames names;
    auto first = plan_of({port("a", "http", 80)});
    names.before_sync(first);
    names.after_sync(first);
    auto second = derived(first, {"a", "b"}, {port("a", "http", 8080), port("b", "", 9)});
    // a's port number changed: the old one is withdrawn; b is not published.
    CHECK(summary(names.before_sync(second)) == Lines{"a: -"});
    // The sync failed: no after_sync. The retry is a plan built whole.
    auto retry = plan_of({port("a", "http", 8080), port("b", "", 9)});
    CHECK(names.before_sync(retry).empty());
    CHECK(summary(names.after_sync(retry)) == Lines{"a: http @1", "b:  @1"});
}

TEST_CASE("programmed names: changes gathered over failed partial syncs are all reported") {
    ProgrammedNames names;
    auto first = plan_of({port("a", "http", 80)});
    names.before_sync(first);
    names.after_sync(first);
    auto second = derived(first, {"b"}, {port("a", "http", 80), port("b", "", 9)});
    names.before_sync(second);  // failed
    auto third =
        derived(second, {"c"}, {port("a", "http", 80), port("b", "", 9), port("c", "", 7)});
    CHECK(names.before_sync(third).empty());
    CHECK(summary(names.after_sync(third)) == Lines{"b:  @1", "c:  @1"});
}

TEST_CASE("programmed names: a dual-stack Service's addresses come from all its ports") {
    ProgrammedNames names;
    auto first = plan_of({port("a", "http", 80, {"10.96.0.1", "fd00::1"})});
    names.before_sync(first);
    auto changes = names.after_sync(first);
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].second->cluster_ips.size() == 2);
    auto one_family = derived(first, {"a"}, {port("a", "http", 80, {"10.96.0.1"})});
    CHECK(summary(names.before_sync(one_family)) == Lines{"a: http @1"});
}
