// The iptables backend (rules/iptables/iptables_backend.h) over the fake
// kernel edges, without privileges: full and partial syncs and the
// fallback between them, the commit order when a table is refused, drift
// repair and adoption of a previous process's tables, cleanup, chain-name
// collisions, and the UDP conntrack reconcile after every sync. Every check
// is on the resulting tables and conntrack entries. The same paths against
// the real kernel: kernel_test.cpp (root).
#include <netinet/in.h>
#include <catch.hpp>

#include <algorithm>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rules/iptables/iptables_backend.h"
#include "rules/iptables/render.h"
#include "rules/iptables/table_apply.h"
#include "tests/unit/fake_conntrack.h"
#include "tests/unit/rules/iptables/fake_xtables.h"
#include "tests/unit/rules/iptables/sample_plan.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::iptables;
using sb::rules::iptables::testing::FakeChain;
using sb::rules::iptables::testing::FakeTable;
using sb::rules::iptables::testing::FakeXtablesKernel;
using sb::rules::iptables::testing::sample_plan;
using sb::rules::iptables::testing::sample_service;
using sb::rules::testing::endpoint;
using sb::rules::testing::FakeConntrack;
using sb::rules::testing::ip;
using sb::rules::testing::options;
using sb::rules::testing::udp_entry;

namespace {

constexpr IpFamily kV4 = IpFamily::kV4;
constexpr IpFamily kV6 = IpFamily::kV6;

// net.ipv4.conf.all.route_localnet as data: its value, and whether the
// next writes are refused.
struct FakeSysctl {
    int value = 0;
    int writes = 0;
    bool refuse = false;
};

class FakeRouteLocalnet final : public RouteLocalnet {
  public:
    explicit FakeRouteLocalnet(FakeSysctl& sysctl) : sysctl_(sysctl) {}
    Result<bool> enable() override {
        if (sysctl_.value == 1) return false;
        if (sysctl_.refuse) return make_error(ErrorCode::kKernel, "write refused", EROFS);
        ++sysctl_.writes;
        sysctl_.value = 1;
        return true;
    }

  private:
    FakeSysctl& sysctl_;
};

// One node's kernel: x_tables, conntrack and route_localnet, shared by every
// backend made from it (a restarted daemon finds the same tables).
struct Node {
    FakeXtablesKernel xtables;
    FakeConntrack conntrack;
    FakeSysctl route_localnet;

    std::unique_ptr<Backend> backend(ChainHash hash = default_chain_hash) {
        return backend_with(options(), std::move(hash));
    }
    std::unique_ptr<Backend> backend_with(const BackendOptions& o,
                                          ChainHash hash = default_chain_hash) {
        return make_backend(o, {xtables.xtables(), conntrack.table(), std::move(hash),
                                std::make_unique<FakeRouteLocalnet>(route_localnet)});
    }
};

Rule jump(const std::string& chain) {
    Rule r;
    r.target.kind = TargetKind::kJump;
    r.target.chain = chain;
    return r;
}

Rule accept_from(const char* source) {
    Rule r;
    r.source = *Prefix::parse(source);
    r.target.kind = TargetKind::kAccept;
    return r;
}

// What kube-proxy (or an admin) keeps in the IPv4 tables: chains, jumps from
// the built-in chains, a plain rule.
void add_others_rules(FakeXtablesKernel& kernel) {
    FakeTable& nat = kernel.edit(kV4, "nat");
    nat.chains["KUBE-SERVICES"].rules = {accept_from("10.0.0.1/32")};
    nat.chains["PREROUTING"].rules.push_back(jump("KUBE-SERVICES"));
    FakeTable& filter = kernel.edit(kV4, "filter");
    Rule drop;
    drop.target.kind = TargetKind::kDrop;
    filter.chains["KUBE-FIREWALL"].rules = {drop};
    filter.chains["INPUT"].rules = {jump("KUBE-FIREWALL"), accept_from("192.0.2.1/32")};
}

// The tables as add_others_rules() left them, for comparison.
void check_others_rules(const FakeXtablesKernel& kernel) {
    const FakeTable* nat = kernel.table(kV4, "nat");
    const FakeTable* filter = kernel.table(kV4, "filter");
    REQUIRE((nat && filter));
    CHECK(nat->chains.at("KUBE-SERVICES").rules == std::vector<Rule>{accept_from("10.0.0.1/32")});
    const std::vector<Rule>& prerouting = nat->chains.at("PREROUTING").rules;
    CHECK(prerouting.back() == jump("KUBE-SERVICES"));
    CHECK(filter->chains.at("KUBE-FIREWALL").rules.size() == 1);
    const std::vector<Rule>& input = filter->chains.at("INPUT").rules;
    REQUIRE(input.size() >= 2);
    CHECK(input[input.size() - 2] == jump("KUBE-FIREWALL"));
    CHECK(input.back() == accept_from("192.0.2.1/32"));
}

// The fake's tables hold exactly `model`: its own chains and nothing else
// of ours, and in each built-in chain its hook rules, once, at the top, in
// order, and no other jump to an own chain.
void check_applied(const FakeXtablesKernel& kernel, const FamilyModel& model) {
    for (const Table* wanted : {&model.nat, &model.filter}) {
        INFO((model.family == kV4 ? "IPv4 " : "IPv6 ") << wanted->name);
        std::map<std::string, FakeChain> chains;
        for (const auto& [name, chain] : wanted->chains)
            chains[name] = FakeChain{false, chain.rules};
        CHECK(kernel.own_chains(model.family, wanted->name) == chains);
        std::map<std::string, std::vector<Rule>> hooks;
        for (const HookRule& hook : wanted->hooks) hooks[hook.builtin].push_back(hook.rule);
        const FakeTable* table = kernel.table(model.family, wanted->name);
        REQUIRE(table);
        for (const auto& [name, chain] : table->chains) {
            if (!chain.builtin) continue;
            INFO(name);
            const std::vector<Rule>& expected = hooks[name];
            REQUIRE(chain.rules.size() >= expected.size());
            CHECK(std::vector<Rule>(chain.rules.begin(),
                                    chain.rules.begin() +
                                        static_cast<std::ptrdiff_t>(expected.size())) == expected);
            size_t own_jumps = 0;
            for (const Rule& rule : chain.rules) {
                if (rule.target.kind == TargetKind::kJump &&
                    rule.target.chain.rfind(kChainPrefix, 0) == 0) {
                    ++own_jumps;
                }
            }
            CHECK(own_jumps == expected.size());
        }
    }
}

void check_applied(const FakeXtablesKernel& kernel, const Plan& plan,
                   const ChainHash& hash = default_chain_hash) {
    const Model model = render(plan, options(), hash).model;
    check_applied(kernel, model.v4);
    check_applied(kernel, model.v6);
}

// The next plan: sctp's endpoint moves (two chains of nat change).
Plan moved_sctp() {
    Plan plan = sample_plan();
    plan.services[2].cluster_endpoints[0].ip = ip("10.244.1.9");
    return plan;
}

// sample_plan() without "empty" and "web": both IPv4 tables change.
Plan smaller_plan() {
    Plan plan = sample_plan();
    plan.services = {plan.services[0], plan.services[2]};
    return plan;
}

// A rule in the own chain of web's cluster endpoints, which moved_sctp()
// does not change: a partial sync keeps it, a full one removes it.
const Rule kMarker = accept_from("192.0.2.99/32");
std::string web_svc() {
    return service_chain_name("SVC", sample_plan().services[3]);
}

bool has_marker(const FakeXtablesKernel& kernel) {
    const auto chains = kernel.own_chains(kV4, "nat");
    auto it = chains.find(web_svc());
    if (it == chains.end()) return false;
    return std::find(it->second.rules.begin(), it->second.rules.end(), kMarker) !=
           it->second.rules.end();
}

// The whole state of both families' tables, for "nothing changed" checks.
std::vector<FakeTable> snapshot(const FakeXtablesKernel& kernel) {
    std::vector<FakeTable> out;
    for (IpFamily family : {kV4, kV6}) {
        for (const char* name : {"nat", "filter"}) {
            const FakeTable* t = kernel.table(family, name);
            out.push_back(t ? *t : FakeTable{});
        }
    }
    return out;
}

}  // namespace

TEST_CASE("iptables backend: a first sync writes the model, others' chains and rules are kept") {
    Node node;
    add_others_rules(node.xtables);
    auto backend = node.backend();
    const Plan plan = sample_plan();

    auto first = backend->sync(plan, nullptr);
    INFO((first ? "" : first.error().describe()));
    REQUIRE(first);
    CHECK(first->full);
    CHECK(first->services == plan.services.size());
    check_applied(node.xtables, plan);
    check_others_rules(node.xtables);
    // Our hook comes before kube-proxy's jump.
    CHECK(node.xtables.targets(kV4, "nat", "PREROUTING") ==
          std::vector<std::string>{kServicesChain, "KUBE-SERVICES"});

    // The same plan again: nothing doubles.
    auto again = backend->sync(plan, &plan);
    REQUIRE(again);
    CHECK_FALSE(again->full);
    check_applied(node.xtables, plan);
    check_others_rules(node.xtables);
}

TEST_CASE("iptables backend: a partial sync rewrites only the changed chains, a full one all") {
    Node node;
    auto backend = node.backend();
    const Plan plan = sample_plan();
    auto full = backend->sync(plan, nullptr);
    REQUIRE(full);
    node.xtables.edit(kV4, "nat").chains.at(web_svc()).rules.push_back(kMarker);

    const Plan next = moved_sctp();
    auto partial = backend->sync(next, &plan);
    REQUIRE(partial);
    CHECK_FALSE(partial->full);
    CHECK(partial->objects_sent > 0);
    CHECK(partial->objects_sent < full->objects_sent / 4);
    CHECK(has_marker(node.xtables));  // an unchanged chain is left as it is
    // The changed chains hold the new endpoint, the old one's chain is gone.
    const FamilyModel wanted = render(next, options()).model.v4;
    const auto chains = node.xtables.own_chains(kV4, "nat");
    for (const auto& [name, chain] : wanted.nat.chains) {
        if (name == web_svc()) continue;
        INFO(name);
        REQUIRE(chains.count(name));
        CHECK(chains.at(name).rules == chain.rules);
    }
    CHECK(chains.size() == wanted.nat.chains.size());

    // Without `previous` every own chain is rewritten: the drift is gone.
    auto repaired = backend->sync(next, nullptr);
    REQUIRE(repaired);
    CHECK(repaired->full);
    CHECK_FALSE(has_marker(node.xtables));
    check_applied(node.xtables, next);
}

TEST_CASE("iptables backend: rules owned and written, per family and table") {
    Node node;
    auto backend = node.backend();
    const Plan plan = sample_plan();
    auto full = backend->sync(plan, nullptr);
    REQUIRE(full);
    auto sum_written = [](const SyncStats& stats) {
        size_t n = 0;
        for (const auto& table : stats.iptables_rules) n += table.written;
        return n;
    };
    REQUIRE(full->iptables_rules.size() == 4);  // IPv4 and IPv6, nat and filter
    for (const auto& table : full->iptables_rules) {
        INFO(to_string(table.family) << " " << table.table);
        CHECK((table.table == "nat" || table.table == "filter"));
        CHECK(table.written == table.total);  // a full sync writes every rule
    }
    CHECK(full->iptables_rules[0].total > 0);
    CHECK(sum_written(*full) == full->objects_sent);

    // The same plan again, partial: nothing written, as many rules owned.
    auto again = backend->sync(plan, &plan);
    REQUIRE(again);
    REQUIRE(again->iptables_rules.size() == 4);
    for (size_t i = 0; i < 4; ++i) {
        CHECK(again->iptables_rules[i].total == full->iptables_rules[i].total);
        CHECK(again->iptables_rules[i].written == 0);
    }
}

TEST_CASE("iptables backend: with `previous` but no known last apply, the sync is full") {
    Node node;
    REQUIRE(node.backend()->sync(sample_plan(), nullptr));
    node.xtables.edit(kV4, "nat").chains.at(web_svc()).rules.push_back(kMarker);
    const Plan plan = sample_plan();

    SECTION("a new backend has applied nothing yet") {
        auto restarted = node.backend();
        auto stats = restarted->sync(moved_sctp(), &plan);
        REQUIRE(stats);
        CHECK(stats->full);
    }
    SECTION("after a failed sync the last apply is unknown") {
        auto backend = node.backend();
        REQUIRE(backend->sync(plan, nullptr));
        node.xtables.edit(kV4, "nat").chains.at(web_svc()).rules.push_back(kMarker);
        node.xtables.fail_commits(kV4, "filter");
        REQUIRE_FALSE(backend->sync(smaller_plan(), &plan));
        auto stats = backend->sync(moved_sctp(), &plan);
        REQUIRE(stats);
        CHECK(stats->full);
    }
    CHECK_FALSE(has_marker(node.xtables));
    check_applied(node.xtables, moved_sctp());
}

TEST_CASE("iptables backend: a refused commit changes neither table") {
    Node node;
    add_others_rules(node.xtables);
    auto backend = node.backend();
    const Plan plan = sample_plan();
    REQUIRE(backend->sync(plan, nullptr));
    const auto before = snapshot(node.xtables);
    const size_t nat_commits = node.xtables.commits(kV4, "nat");
    const size_t filter_commits = node.xtables.commits(kV4, "filter");

    SECTION("filter refused: nothing was committed") {
        node.xtables.fail_commits(kV4, "filter");
        auto s = backend->sync(smaller_plan(), &plan);
        REQUIRE_FALSE(s);
        CHECK(s.error().message.find("iptables filter table: commit") != std::string::npos);
        CHECK(node.xtables.commits(kV4, "nat") == nat_commits);
        CHECK(node.xtables.restores() == 0);
    }
    SECTION("nat refused: the committed filter table is put back") {
        // The next plan does change filter: what follows is a restore.
        REQUIRE(render(smaller_plan(), options()).model.v4.filter !=
                render(plan, options()).model.v4.filter);
        node.xtables.fail_commits(kV4, "nat");
        auto s = backend->sync(smaller_plan(), &plan);
        REQUIRE_FALSE(s);
        INFO(s.error().describe());
        CHECK(s.error().message.find("filter table restored") != std::string::npos);
        CHECK(node.xtables.commits(kV4, "filter") == filter_commits + 1);
        CHECK(node.xtables.restores() == 1);
    }
    CHECK(snapshot(node.xtables) == before);
    // The retry goes through, in full.
    auto retry = backend->sync(smaller_plan(), &plan);
    REQUIRE(retry);
    CHECK(retry->full);
    check_applied(node.xtables, smaller_plan());
    check_others_rules(node.xtables);
}

TEST_CASE("iptables backend: a failed restore is reported; the next sync rewrites both tables") {
    Node node;
    auto backend = node.backend();
    const Plan plan = sample_plan();
    REQUIRE(backend->sync(plan, nullptr));
    node.xtables.fail_commits(kV4, "nat");
    node.xtables.fail_restores();

    auto s = backend->sync(smaller_plan(), &plan);

    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("restoring the filter table failed too") != std::string::npos);
    // filter holds the new rules, nat the old ones.
    const Model smaller = render(smaller_plan(), options()).model;
    const Model old = render(plan, options()).model;
    CHECK(node.xtables.own_chains(kV4, "filter").size() == smaller.v4.filter.chains.size());
    CHECK(node.xtables.own_chains(kV4, "nat").size() == old.v4.nat.chains.size());

    auto retry = backend->sync(smaller_plan(), &plan);
    REQUIRE(retry);
    CHECK(retry->full);
    check_applied(node.xtables, smaller_plan());
}

TEST_CASE("iptables backend: after a restart the tables are adopted and drift is repaired") {
    Node node;
    add_others_rules(node.xtables);
    REQUIRE(node.backend()->sync(sample_plan(), nullptr));
    // Drift while no daemon ran: a flushed chain, a deleted hook, a foreign
    // rule in an own chain, a duplicate hook, a stale own chain with a jump.
    FakeTable& nat = node.xtables.edit(kV4, "nat");
    nat.chains.at(web_svc()).rules.clear();
    nat.chains.at("OUTPUT").rules.clear();
    nat.chains.at(kNodePortsChain).rules.push_back(kMarker);
    nat.chains.at("PREROUTING").rules.push_back(jump(kServicesChain));
    nat.chains["SWITCHBOARD-SVC-OLDOLDOLDOLD"].rules = {jump(kMarkMasqChain)};
    nat.chains.at("PREROUTING").rules.push_back(jump("SWITCHBOARD-SVC-OLDOLDOLDOLD"));

    auto restarted = node.backend();
    auto stats = restarted->sync(sample_plan(), nullptr);

    INFO((stats ? "" : stats.error().describe()));
    REQUIRE(stats);
    CHECK(stats->full);
    check_applied(node.xtables, sample_plan());
    check_others_rules(node.xtables);
    // A service gone while the daemon was down loses its chains too.
    REQUIRE(node.backend()->sync(smaller_plan(), nullptr));
    check_applied(node.xtables, smaller_plan());
}

TEST_CASE("iptables backend: the periodic check sees flushed chains and lost hooks, nothing else") {
    Node node;
    add_others_rules(node.xtables);
    auto backend = node.backend();
    auto unsynced = backend->kernel_intact();
    REQUIRE(unsynced);
    CHECK_FALSE(unsynced.value());  // nothing applied yet
    REQUIRE(backend->sync(sample_plan(), nullptr));
    auto intact = backend->kernel_intact();
    REQUIRE(intact);
    CHECK(intact.value());
    // Another owner's rules come and go without concern.
    node.xtables.edit(kV4, "nat").chains.at("KUBE-SERVICES").rules.clear();
    intact = backend->kernel_intact();
    REQUIRE(intact);
    CHECK(intact.value());

    SECTION("a flushed top-level chain") {
        node.xtables.edit(kV4, "nat").chains.at(kServicesChain).rules.clear();
    }
    SECTION("a deleted hook") {
        node.xtables.edit(kV4, "nat").chains.at("PREROUTING").rules.clear();
    }
    SECTION("a flushed filter table") {
        for (auto& [name, chain] : node.xtables.edit(kV4, "filter").chains) chain.rules.clear();
    }
    auto drifted = backend->kernel_intact();
    REQUIRE(drifted);
    CHECK_FALSE(drifted.value());
    REQUIRE(backend->sync(sample_plan(), nullptr));
    check_applied(node.xtables, sample_plan());
    auto repaired = backend->kernel_intact();
    REQUIRE(repaired);
    CHECK(repaired.value());
}

TEST_CASE("iptables backend: cleanup removes only own chains and hooks, idempotent, creates none") {
    Node node;
    auto backend = node.backend();
    // Nothing instantiated: cleanup must not create tables.
    REQUIRE(backend->cleanup());
    for (IpFamily family : {kV4, kV6}) {
        CHECK(node.xtables.table(family, "nat") == nullptr);
        CHECK(node.xtables.table(family, "filter") == nullptr);
    }
    add_others_rules(node.xtables);
    const FakeTable nat = *node.xtables.table(kV4, "nat");
    const FakeTable filter = *node.xtables.table(kV4, "filter");
    REQUIRE(backend->sync(sample_plan(), nullptr));
    // What is left: kube-proxy's chains untouched, IPv6 empty.
    auto check_clean = [&] {
        CHECK(*node.xtables.table(kV4, "nat") == nat);
        CHECK(*node.xtables.table(kV4, "filter") == filter);
        for (const char* name : {"nat", "filter"}) {
            for (const auto& [chain, contents] : node.xtables.table(kV6, name)->chains) {
                CHECK(contents.builtin);
                CHECK(contents.rules.empty());
            }
        }
    };

    REQUIRE(backend->cleanup());
    check_clean();

    const size_t commits = node.xtables.commits(kV4, "nat") + node.xtables.commits(kV4, "filter") +
                           node.xtables.commits(kV6, "nat") + node.xtables.commits(kV6, "filter");
    REQUIRE(backend->cleanup());
    check_clean();
    CHECK(node.xtables.commits(kV4, "nat") + node.xtables.commits(kV4, "filter") +
              node.xtables.commits(kV6, "nat") + node.xtables.commits(kV6, "filter") ==
          commits);  // nothing to change, nothing committed
}

TEST_CASE("iptables backend: a colliding chain name skips the later port, the earlier is intact") {
    Node node;
    const ServicePortPlan dns = sample_plan().services[0];
    const ServicePortPlan empty = sample_plan().services[1];
    // "empty" hashes like "dns" (earlier in plan order).
    const ChainHash colliding = [&](std::string_view text) {
        return default_chain_hash(text == service_hash_input(empty) ? service_hash_input(dns)
                                                                    : std::string(text));
    };
    auto backend = node.backend(colliding);
    auto stats = backend->sync(sample_plan(), nullptr);
    REQUIRE(stats);
    CHECK(stats->chain_name_collisions == 1);
    check_applied(node.xtables, sample_plan(), colliding);
    // dns's rules are those it has without a collision, in every chain.
    const Model clean = render(sample_plan(), options()).model;
    auto of_port = [](const std::vector<Rule>& rules, const ServicePortPlan& port) {
        std::vector<Rule> out;
        for (const Rule& rule : rules) {
            if (rule.comment.find(port.id()) != std::string::npos) out.push_back(rule);
        }
        return out;
    };
    size_t dns_rules = 0;
    for (const Table* table : {&clean.v4.nat, &clean.v4.filter}) {
        const FakeTable* applied = node.xtables.table(kV4, table->name);
        REQUIRE(applied);
        for (const auto& [name, chain] : table->chains) {
            const std::vector<Rule> wanted = of_port(chain.rules, dns);
            dns_rules += wanted.size();
            if (wanted.empty()) continue;
            INFO(name);
            REQUIRE(applied->chains.count(name));
            CHECK(of_port(applied->chains.at(name).rules, dns) == wanted);
        }
    }
    CHECK(dns_rules > 0);
    // No rule anywhere speaks for "empty".
    for (const char* table : {"nat", "filter"}) {
        for (const auto& [name, chain] : node.xtables.table(kV4, table)->chains) {
            for (const Rule& rule : chain.rules) {
                CHECK(rule.comment.find(empty.service + ":") == std::string::npos);
            }
        }
    }
}

TEST_CASE("iptables backend: without IPv6 x_tables only IPv6 services fail the sync") {
    Node node;
    node.xtables.remove_family(kV6);
    auto backend = node.backend();
    auto v4_only = backend->sync(smaller_plan(), nullptr);  // dns and sctp: IPv4 only
    REQUIRE(v4_only);
    check_applied(node.xtables, render(smaller_plan(), options()).model.v4);
    auto dual = backend->sync(sample_plan(), nullptr);  // web has an IPv6 ClusterIP
    REQUIRE_FALSE(dual);
    CHECK(dual.error().message.find("ip6tables nat table") != std::string::npos);
}

TEST_CASE("iptables backend: an apply needs the xtables lock; a busy one changes nothing") {
    Node node;
    auto backend = node.backend();
    REQUIRE(backend->sync(sample_plan(), nullptr));
    const auto before = snapshot(node.xtables);
    auto other_writer = node.xtables.xtables();
    auto held = other_writer->lock();
    REQUIRE(held);
    auto s = backend->sync(smaller_plan(), nullptr);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("lock") != std::string::npos);
    CHECK(snapshot(node.xtables) == before);
}

namespace {

// For sample_plan()'s dns (10.96.0.53:80 -> 10.244.2.9:8080).
const UdpFlow kLive = udp_entry("10.96.0.53", 80, "10.244.2.9", 8080, 40000);
const UdpFlow kRemovedEndpoint = udp_entry("10.96.0.53", 80, "10.244.2.10", 8080, 40001);
const UdpFlow kBeforeEndpoints = udp_entry("10.96.0.53", 80, "10.96.0.53", 80, 40002);
const UdpFlow kNotAService = udp_entry("10.96.0.99", 80, "10.244.5.5", 8080, 40003);

}  // namespace

TEST_CASE("iptables backend: every sync deletes the stale UDP flows of the plan, nothing else") {
    Node node;
    node.conntrack.flows[kV4] = {kLive, kRemovedEndpoint, kBeforeEndpoints, kNotAService};
    auto backend = node.backend();

    auto stats = backend->sync(sample_plan(), nullptr);  // a full sync: no previous plan

    REQUIRE(stats);
    CHECK(node.conntrack.deleted == std::vector<UdpFlow>{kRemovedEndpoint, kBeforeEndpoints});
    CHECK(node.conntrack.flows[kV4] == std::vector<UdpFlow>{kLive, kNotAService});
    REQUIRE(stats->conntrack.size() == 2);
    CHECK(stats->conntrack[0].ok);
    CHECK(stats->conntrack[0].deleted == 2);
    CHECK_FALSE(stats->conntrack[1].dumped);  // no IPv6 UDP service port
    CHECK(node.conntrack.dumps[kV6] == 0);
}

TEST_CASE(
    "iptables backend: a failed conntrack deletion is reported and retried on the next sync") {
    Node node;
    node.conntrack.flows[kV4] = {kLive, kRemovedEndpoint, kBeforeEndpoints};
    node.conntrack.fail_deletions(EPERM);
    auto backend = node.backend();
    const Plan plan = sample_plan();

    auto first = backend->sync(plan, nullptr);

    REQUIRE(first);  // the rules are in; the reconcile failed on its own
    REQUIRE(first->conntrack.size() == 2);
    CHECK_FALSE(first->conntrack[0].ok);
    CHECK(first->conntrack[0].error == "conntrack: delete: Operation not permitted");
    CHECK(first->conntrack[0].deleted == 1);
    CHECK(node.conntrack.flows[kV4] == std::vector<UdpFlow>{kLive, kRemovedEndpoint});

    auto second = backend->sync(plan, &plan);  // the same plan: a partial sync

    REQUIRE(second);
    CHECK(second->conntrack[0].ok);
    CHECK(second->conntrack[0].deleted == 1);
    CHECK(node.conntrack.flows[kV4] == std::vector<UdpFlow>{kLive});
}

namespace {

// sample_plan() with default/stats: UDP 10.96.0.60:80 and NodePort 30060 to
// 10.244.1.9:8080 on this node.
Plan with_stats() {
    Plan plan = sample_plan();
    ServicePortPlan stats = sample_service("stats", "10.96.0.60", Protocol::kUDP);
    stats.node_port = 30060;
    stats.cluster_endpoints = {endpoint("10.244.1.9", 8080, true)};
    stats.local_endpoints = stats.cluster_endpoints;
    std::vector<ServicePortPlan> ports(plan.services.begin(), plan.services.end());
    ports.push_back(stats);
    plan.services = std::move(ports);
    return plan;
}

const UdpFlow kStats = udp_entry("10.96.0.60", 80, "10.244.1.9", 8080, 40010);
const UdpFlow kStatsNodePort = udp_entry("192.168.1.10", 30060, "10.244.1.9", 8080, 40011);
const UdpFlow kStatsUndnated = udp_entry("10.96.0.60", 80, "10.96.0.60", 80, 40012);

}  // namespace

TEST_CASE("iptables backend: a restart deletes the DNATed flows of a Service deleted meanwhile") {
    Node node;
    REQUIRE(node.backend()->sync(with_stats(), nullptr));
    node.conntrack.flows[kV4] = {kLive, kStats, kStatsNodePort, kStatsUndnated, kNotAService};

    // default/stats went while no daemon ran: only the nat table still knows it.
    auto restarted = node.backend();
    auto stats = restarted->sync(sample_plan(), nullptr);

    REQUIRE(stats);
    CHECK(node.conntrack.deleted == std::vector<UdpFlow>{kStats, kStatsNodePort});
    CHECK(node.conntrack.flows[kV4] == std::vector<UdpFlow>{kLive, kStatsUndnated, kNotAService});

    // Judged once: the next sync leaves a later flow to the old address alone.
    node.conntrack.deleted.clear();
    node.conntrack.flows[kV4] = {kStats};
    REQUIRE(restarted->sync(sample_plan(), nullptr));
    CHECK(node.conntrack.deleted.empty());
}

TEST_CASE("iptables backend: localhost NodePorts set route_localnet once, and only when on") {
    SECTION("on (kube-proxy's default): the first sync sets it, later ones find it set") {
        Node node;
        auto backend = node.backend();
        auto first = backend->sync(sample_plan(), nullptr);
        REQUIRE(first);
        CHECK(first->route_localnet_failures == 0);
        CHECK(node.route_localnet.value == 1);
        REQUIRE(backend->sync(sample_plan(), nullptr));
        CHECK(node.route_localnet.writes == 1);
        CHECK(node.xtables.targets(kV4, "filter", "INPUT").front() == kLocalnetGuardChain);
        CHECK(node.xtables.targets(kV4, "filter", "OUTPUT").front() == kLocalnetGuardChain);
        CHECK(node.xtables.targets(kV6, "filter", "INPUT").front() != kLocalnetGuardChain);
    }
    SECTION("off, or --nodeport-addresses without loopback: never touched") {
        BackendOptions off = options();
        off.localhost_node_ports = false;
        BackendOptions elsewhere = options();
        elsewhere.nodeport_addresses = {*Prefix::parse("192.168.1.0/24")};
        for (const BackendOptions& o : {off, elsewhere}) {
            Node node;
            REQUIRE(node.backend_with(o)->sync(sample_plan(), nullptr));
            CHECK(node.route_localnet.value == 0);
            CHECK(node.route_localnet.writes == 0);
            CHECK(node.xtables.own_chains(kV4, "filter").count(kLocalnetGuardChain) == 0);
        }
    }
    SECTION("--dry-run (render_text) sets nothing") {
        Node node;
        REQUIRE(node.backend()->render_text(sample_plan()));
        CHECK(node.route_localnet.value == 0);
    }
}

TEST_CASE("iptables backend: a refused route_localnet is counted, retried, and fails no sync") {
    Node node;
    node.route_localnet.refuse = true;
    auto backend = node.backend();
    const Plan plan = sample_plan();
    auto first = backend->sync(plan, nullptr);
    REQUIRE(first);  // the rules are in: every other NodePort address works
    CHECK(first->route_localnet_failures == 1);
    CHECK(node.xtables.own_chains(kV4, "filter").count(kLocalnetGuardChain) == 1);
    auto second = backend->sync(plan, &plan);
    REQUIRE(second);
    CHECK(second->route_localnet_failures == 1);

    node.route_localnet.refuse = false;
    auto third = backend->sync(plan, &plan);
    REQUIRE(third);
    CHECK(third->route_localnet_failures == 0);
    CHECK(node.route_localnet.value == 1);
}

TEST_CASE("iptables backend: turned off, the guard goes and route_localnet stays") {
    Node node;
    REQUIRE(node.backend()->sync(sample_plan(), nullptr));
    REQUIRE(node.xtables.own_chains(kV4, "filter").count(kLocalnetGuardChain) == 1);

    // A restart with --iptables-localhost-nodeports=false.
    BackendOptions off = options();
    off.localhost_node_ports = false;
    REQUIRE(node.backend_with(off)->sync(sample_plan(), nullptr));
    CHECK(node.xtables.own_chains(kV4, "filter").count(kLocalnetGuardChain) == 0);
    for (const char* builtin : {"INPUT", "OUTPUT"}) {
        const auto targets = node.xtables.targets(kV4, "filter", builtin);
        CHECK(std::find(targets.begin(), targets.end(), kLocalnetGuardChain) == targets.end());
    }
    // Never turned back off: another component may rely on it (docs/iptables.md).
    CHECK(node.route_localnet.value == 1);
}
