// The fake kernel itself (fake_channel.h): the backend tests are only as
// good as its refusals, its all-or-nothing batches and its read-back.
#include <errno.h>
#include <catch.hpp>

#include "rules/nftables/render.h"
#include "tests/unit/rules/nftables/fake_channel.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using sb::rules::nftables::testing::FakeKernel;
using sb::rules::nftables::testing::kernel_text;

namespace {

std::unique_ptr<Channel> open(FakeKernel& kernel) {
    auto channel = kernel.opener()();
    REQUIRE(channel);
    return std::move(channel.value());
}

// A base chain jumping to `target`, and `target` with one rule.
Model two_chains() {
    Model m;
    Chain& base = m.chains["base"];
    base.name = "base";
    base.hook = Hook{"nat", "prerouting", -100};
    base.rules.push_back({verdict(VerdictKind::kJump, "target")});
    Chain& target = m.chains["target"];
    target.name = "target";
    target.rules.push_back({verdict(VerdictKind::kAccept)});
    return m;
}

Delta create(const Model& m) {
    return diff(Model{}, m, true);
}

}  // namespace

TEST_CASE("fake kernel: a batch is applied whole, or refused and nothing changes") {
    FakeKernel kernel;
    auto channel = open(kernel);
    const Model m = two_chains();
    REQUIRE(channel->apply(create(m), m));
    const std::string before = kernel_text(*kernel.table());
    CHECK(before == kernel_text(m));

    SECTION("deleting a chain still jumped to") {
        Delta d;
        d.flush_chains = {"target"};  // applied first, then rolled back
        d.del_chains = {"target"};
        const Status s = channel->apply(d, m);
        REQUIRE_FALSE(s);
        CHECK(s.error().errno_value == EBUSY);
    }
    SECTION("flushing a chain that does not exist") {
        Delta d;
        d.flush_chains = {"target", "missing"};
        const Status s = channel->apply(d, m);
        REQUIRE_FALSE(s);
        CHECK(s.error().errno_value == ENOENT);
    }
    SECTION("a rule jumping to a chain that does not exist") {
        Model broken = m;
        broken.chains["target"].rules.push_back({verdict(VerdictKind::kGoto, "nowhere")});
        Delta d;
        d.flush_chains = {"target"};
        d.fill_chains = {"target"};
        CHECK_FALSE(channel->apply(d, broken));
    }
    SECTION("told to refuse the next batch") {
        kernel.fail_next_batch = EPERM;
        const Status s = channel->apply(create(m), m);
        REQUIRE_FALSE(s);
        CHECK(s.error().errno_value == EPERM);
        CHECK(channel->apply(Delta{}, m));  // once only
    }
    CHECK(kernel_text(*kernel.table()) == before);
}

TEST_CASE("fake kernel: the table reads back as names, hooks and types only") {
    FakeKernel kernel;
    auto channel = open(kernel);
    auto none = channel->read_table();
    REQUIRE(none);
    CHECK_FALSE(none->has_value());

    const Plan plan = sb::rules::testing::plan_on_node_a(
        {sb::rules::testing::web(sb::rules::testing::three_endpoints())});
    const Model m = render(plan, sb::rules::testing::options()).model;
    REQUIRE(channel->apply(create(m), m));
    auto read = channel->read_table();
    REQUIRE(read);
    REQUIRE(read->has_value());
    const Model& back = **read;
    CHECK(back.chains.size() == m.chains.size());
    CHECK(back.sets.size() == m.sets.size());
    for (const auto& [name, chain] : back.chains) {
        CHECK(chain.rules.empty());
        CHECK(chain.hook == m.chains.at(name).hook);
    }
    for (const auto& [name, set] : back.sets) {
        CHECK(set.elements.empty());
        CHECK(set.same_type(m.sets.at(name)));
    }
    // The elements themselves are there: a dump shows them.
    const Set& services = m.sets.at(services_map(IpFamily::kV4));
    auto elements = channel->dump_elements(services);
    REQUIRE(elements);
    CHECK(*elements == services.elements);
}

TEST_CASE("fake kernel: deleting the table is idempotent and leaves other tables") {
    FakeKernel kernel;
    kernel.tables["other"];
    auto channel = open(kernel);
    const Model m = two_chains();
    REQUIRE(channel->apply(create(m), m));
    REQUIRE(channel->delete_table());
    REQUIRE(channel->delete_table());
    CHECK(kernel.table() == nullptr);
    CHECK(kernel.tables.count("other") == 1);
}
