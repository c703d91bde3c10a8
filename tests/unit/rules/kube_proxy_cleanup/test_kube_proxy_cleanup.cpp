// --cleanup-kube-proxy's iptables-legacy step (rules/kube_proxy_cleanup,
// remove_legacy_chains) over the fake x_tables kernel (fake_xtables.h),
// without root: kube-proxy's chains in nat, filter and mangle go with the
// jumps into them from others' chains, everything else stays, a table the
// kernel has not instantiated is not created, one commit per changed table,
// a second run finds nothing; a refused commit, a busy lock and an
// unreadable list of tables fail naming the step and change nothing. The
// same against the kernel: tests/integration/test_cleanup_kube_proxy.py.
#include <errno.h>
#include <catch.hpp>

#include <string>
#include <vector>

#include "rules/kube_proxy_cleanup/steps.h"
#include "tests/unit/rules/iptables/fake_xtables.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::iptables;
using sb::rules::iptables::testing::FakeTable;
using sb::rules::iptables::testing::FakeXtablesKernel;
using sb::rules::kube_proxy_cleanup::remove_legacy_chains;
using sb::rules::kube_proxy_cleanup::Removed;

namespace {

constexpr IpFamily kV4 = IpFamily::kV4;
constexpr IpFamily kV6 = IpFamily::kV6;

Rule jump(const std::string& chain) {
    Rule r;
    r.target.kind = TargetKind::kJump;
    r.target.chain = chain;
    return r;
}

Rule accept() {
    return Rule{};
}

// What kube-proxy's iptables mode leaves in `family`'s tables, beside a
// firewall's own chain (which jumps to kube-proxy's too) and rules of
// others in the built-in chains.
void load_kube_proxy(FakeXtablesKernel& kernel, IpFamily family) {
    FakeTable& nat = kernel.edit(family, "nat");
    nat.chains["PREROUTING"].rules = {accept(), jump("KUBE-SERVICES")};
    nat.chains["OUTPUT"].rules = {jump("KUBE-SERVICES"), accept()};
    nat.chains["POSTROUTING"].rules = {jump("KUBE-POSTROUTING")};
    nat.chains["KUBE-SERVICES"].rules = {jump("KUBE-SVC-ABCDEF"), jump("KUBE-NODEPORTS")};
    nat.chains["KUBE-SVC-ABCDEF"].rules = {jump("KUBE-SEP-123456")};
    nat.chains["KUBE-SEP-123456"].rules = {jump("KUBE-MARK-MASQ"), accept()};
    nat.chains["KUBE-MARK-MASQ"].rules = {accept()};
    nat.chains["KUBE-NODEPORTS"].rules = {};
    nat.chains["KUBE-POSTROUTING"].rules = {accept()};
    nat.chains["CNI-NAT"].rules = {jump("KUBE-MARK-MASQ"), accept()};
    FakeTable& filter = kernel.edit(family, "filter");
    filter.chains["INPUT"].rules = {jump("KUBE-PROXY-FIREWALL"), accept()};
    filter.chains["FORWARD"].rules = {jump("KUBE-FORWARD")};
    filter.chains["KUBE-PROXY-FIREWALL"].rules = {};
    filter.chains["KUBE-FORWARD"].rules = {accept()};
    // kubelet's, not kube-proxy's (filter's KUBE-FIREWALL): it stays.
    filter.chains["KUBE-FIREWALL"].rules = {accept()};
    filter.chains["INPUT"].rules.push_back(jump("KUBE-FIREWALL"));
    FakeTable& mangle = kernel.edit(family, "mangle");
    mangle.chains["KUBE-PROXY-CANARY"].rules = {};
}

std::vector<std::string> chains_of(const FakeXtablesKernel& kernel, IpFamily family,
                                   const std::string& table) {
    std::vector<std::string> out;
    for (const auto& [name, chain] : kernel.table(family, table)->chains) {
        if (!chain.builtin) out.push_back(name);
    }
    return out;
}

}  // namespace

TEST_CASE("kube-proxy cleanup (legacy): kube-proxy's chains and the jumps into them go") {
    FakeXtablesKernel kernel;
    load_kube_proxy(kernel, kV4);
    auto xtables = kernel.xtables();
    Removed removed;

    REQUIRE(remove_legacy_chains(*xtables, kV4, removed));

    CHECK(chains_of(kernel, kV4, "nat") == std::vector<std::string>{"CNI-NAT"});
    CHECK(chains_of(kernel, kV4, "filter") == std::vector<std::string>{"KUBE-FIREWALL"});
    CHECK(chains_of(kernel, kV4, "mangle").empty());
    CHECK(kernel.targets(kV4, "nat", "PREROUTING") == std::vector<std::string>{"ACCEPT"});
    CHECK(kernel.targets(kV4, "nat", "OUTPUT") == std::vector<std::string>{"ACCEPT"});
    CHECK(kernel.targets(kV4, "nat", "POSTROUTING").empty());
    CHECK(kernel.targets(kV4, "nat", "CNI-NAT") == std::vector<std::string>{"ACCEPT"});
    CHECK(kernel.targets(kV4, "filter", "INPUT") ==
          std::vector<std::string>{"ACCEPT", "KUBE-FIREWALL"});
    CHECK(removed.legacy_jump_rules == 6);  // 4 from built-ins, 1 from CNI-NAT, 1 INPUT
    CHECK(removed.legacy_chains == 9);
    CHECK(kernel.commits(kV4, "nat") == 1);
    CHECK(kernel.commits(kV4, "filter") == 1);
    CHECK(kernel.commits(kV4, "mangle") == 1);
    // IPv6 was never instantiated: nothing opened, nothing created.
    Removed v6;
    REQUIRE(remove_legacy_chains(*xtables, kV6, v6));
    CHECK(v6.nothing());
    CHECK(kernel.table(kV6, "nat") == nullptr);
    CHECK(kernel.table(kV6, "filter") == nullptr);
}

TEST_CASE("kube-proxy cleanup (legacy): a second run finds nothing and commits nothing") {
    FakeXtablesKernel kernel;
    load_kube_proxy(kernel, kV6);
    auto xtables = kernel.xtables();
    Removed first;
    REQUIRE(remove_legacy_chains(*xtables, kV6, first));
    REQUIRE(first.legacy_chains == 9);

    Removed second;
    REQUIRE(remove_legacy_chains(*xtables, kV6, second));

    CHECK(second.nothing());
    CHECK(kernel.commits(kV6, "nat") == 1);
    CHECK(kernel.commits(kV6, "filter") == 1);
}

TEST_CASE("kube-proxy cleanup (legacy): a refused commit fails naming it, that table unchanged") {
    FakeXtablesKernel kernel;
    load_kube_proxy(kernel, kV6);
    const FakeTable filter_before = *kernel.table(kV6, "filter");
    kernel.fail_commits(kV6, "filter");
    auto xtables = kernel.xtables();
    Removed removed;

    Status s = remove_legacy_chains(*xtables, kV6, removed);

    REQUIRE_FALSE(s);
    CHECK(s.error().message.rfind("ip6tables-legacy: ", 0) == 0);
    CHECK(s.error().message.find("filter") != std::string::npos);
    CHECK(*kernel.table(kV6, "filter") == filter_before);
    // nat, committed before, is counted; filter is not; mangle was not reached.
    CHECK(removed.legacy_chains == 6);
    CHECK(removed.legacy_jump_rules == 4);
    CHECK(chains_of(kernel, kV6, "mangle") == std::vector<std::string>{"KUBE-PROXY-CANARY"});
}

TEST_CASE("kube-proxy cleanup (legacy): a busy lock or an unreadable table list changes nothing") {
    FakeXtablesKernel kernel;
    load_kube_proxy(kernel, kV4);
    const FakeTable nat_before = *kernel.table(kV4, "nat");
    auto xtables = kernel.xtables();
    Removed removed;
    Status s;

    SECTION("another writer holds the xtables lock") {
        auto other_writer = kernel.xtables();
        auto held = other_writer->lock();
        REQUIRE(held);
        s = remove_legacy_chains(*xtables, kV4, removed);
        REQUIRE_FALSE(s);
        CHECK(s.error().message.find("lock") != std::string::npos);
    }
    SECTION("the kernel's list of tables cannot be read") {
        kernel.refuse_table_list(kV4, EACCES);
        s = remove_legacy_chains(*xtables, kV4, removed);
        REQUIRE_FALSE(s);
        CHECK(s.error().describe() ==
              "iptables-legacy: read the list of tables: Permission denied");
    }
    CHECK(s.error().message.rfind("iptables-legacy: ", 0) == 0);
    CHECK(*kernel.table(kV4, "nat") == nat_before);
    CHECK(removed.nothing());
}
