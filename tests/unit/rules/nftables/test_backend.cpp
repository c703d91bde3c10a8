// The nftables backend's sync logic over the fake kernel (fake_channel.h),
// without root: full and incremental syncs, the fallback from incremental
// to full, drift repair, adoption of an existing table, cleanup, the
// affinity cleanup and the UDP conntrack reconcile (over the fake conntrack
// table, fake_conntrack.h). Every check is on the state the fake kernel and
// the fake conntrack table end in.
#include <errno.h>
#include <netinet/in.h>
#include <catch.hpp>

#include <cstddef>
#include <string>
#include <vector>

#include "rules/nftables/nftables_backend.h"
#include "rules/nftables/render.h"
#include "tests/unit/fake_conntrack.h"
#include "tests/unit/rules/nftables/fake_channel.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using sb::rules::nftables::testing::FakeKernel;
using sb::rules::nftables::testing::kernel_text;
using sb::rules::testing::endpoint;
using sb::rules::testing::FakeConntrack;
using sb::rules::testing::ip;
using sb::rules::testing::options;
using sb::rules::testing::plan_on_node_a;
using sb::rules::testing::three_endpoints;
using sb::rules::testing::udp_entry;
using sb::rules::testing::web;

namespace {

// default/web (three endpoints), default/api (ClientIP affinity, a
// NodePort, two endpoints), default/dns (dual-stack). All TCP: the UDP
// conntrack cases below add their own UDP port.
Plan sample_plan() {
    ServicePortPlan api =
        web({endpoint("10.244.1.8", 9090, true), endpoint("10.244.2.8", 9090, false)});
    api.service = "api";
    api.cluster_ips = {ip("10.96.0.11")};
    api.node_port = 30011;
    api.session_affinity = {true, 60};
    ServicePortPlan dns =
        web({endpoint("10.244.1.9", 53, true), endpoint("fd00:244::9", 53, true)});
    dns.service = "dns";
    dns.port_name = "dns-tcp";
    dns.cluster_ips = {ip("10.96.0.53"), ip("fd00:96::53")};
    dns.port = 53;
    return plan_on_node_a({api, dns, web(three_endpoints())});
}

size_t index_of(const Plan& plan, const char* service) {
    for (size_t i = 0; i < plan.services.size(); ++i) {
        if (plan.services[i].service == service) return i;
    }
    FAIL("no service " << service);
    return 0;
}

// `plan` with web's second endpoint moved, as the planner derives it: a new
// revision whose change set names default/web.
Plan with_moved_endpoint(const Plan& plan) {
    Plan next = plan;
    next.services[index_of(next, "web")].cluster_endpoints[1].ip = ip("10.244.2.99");
    next.revision = next_plan_revision();
    next.changes = PlanChanges{plan.revision, {{"default", "web"}}};
    return next;
}

// What the kernel must hold for `plan`: the rendered model.
std::string expected(const Plan& plan) {
    return kernel_text(render(plan, options()).model);
}

std::string actual(FakeKernel& kernel) {
    REQUIRE(kernel.table() != nullptr);
    return kernel_text(*kernel.table());
}

Plan numbered(Plan plan) {
    plan.revision = next_plan_revision();
    return plan;
}

SyncStats synced(Backend& backend, const Plan& plan, const Plan* previous) {
    auto stats = backend.sync(plan, previous);
    INFO((stats ? "" : stats.error().describe()));
    REQUIRE(stats);
    return *stats;
}

}  // namespace

TEST_CASE("backend: a first sync writes the rendered table in full") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan plan = numbered(sample_plan());
    const SyncStats stats = synced(*backend, plan, nullptr);
    CHECK(stats.full);
    CHECK(stats.services == 3);
    CHECK(actual(kernel) == expected(plan));
}

TEST_CASE("backend: an endpoint change is sent incrementally and reaches the rendered table") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = numbered(sample_plan());
    const SyncStats first = synced(*backend, before, nullptr);
    const Plan after = with_moved_endpoint(before);
    const SyncStats step = synced(*backend, after, &before);
    CHECK_FALSE(step.full);
    CHECK(step.objects_sent > 0);
    CHECK(step.objects_sent < first.objects_sent / 4);
    CHECK(actual(kernel) == expected(after));
    CHECK(actual(kernel).find("10.244.2.99") != std::string::npos);
}

TEST_CASE("backend: an incremental sync whose batch is refused falls back to a full one") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = numbered(sample_plan());
    synced(*backend, before, nullptr);
    const Plan after = with_moved_endpoint(before);
    kernel.fail_next_batch = EINVAL;
    const SyncStats stats = synced(*backend, after, &before);
    CHECK(stats.full);
    CHECK(actual(kernel) == expected(after));
}

TEST_CASE("backend: without a known previous state the sync is full") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = numbered(sample_plan());
    const Plan after = with_moved_endpoint(before);

    SECTION("no previous plan (a periodic resync)") {
        synced(*backend, before, nullptr);
        CHECK(synced(*backend, after, nullptr).full);
    }
    SECTION("a previous plan, but this backend never synced it") {
        CHECK(synced(*backend, after, &before).full);
    }
    SECTION("the last sync failed: what the kernel holds is unknown") {
        synced(*backend, before, nullptr);
        const Plan failed = with_moved_endpoint(after);
        kernel.fail_next_batch = ENOMEM;
        REQUIRE_FALSE(backend->sync(failed, nullptr));
        CHECK(actual(kernel) == expected(before));
        CHECK(synced(*backend, after, &failed).full);
    }
    SECTION("a previous plan out of order cannot be compared") {
        synced(*backend, before, nullptr);
        Plan unordered = before;
        unordered.revision = 0;
        unordered.services.sort([](const ServicePortPlan& a, const ServicePortPlan& b) {
            return a.service > b.service;
        });
        Plan next = after;
        next.changes.reset();
        CHECK(synced(*backend, next, &unordered).full);
    }
    CHECK(actual(kernel) == expected(after));
}

TEST_CASE("backend: a full resync repairs drift behind its back") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan plan = numbered(sample_plan());
    synced(*backend, plan, nullptr);
    Model& table = *kernel.table();
    const std::string services = services_map(IpFamily::kV4);

    SECTION("a flushed chain") {
        table.chains.at(kServicesChain).rules.clear();
    }
    SECTION("deleted elements and a deleted per-service chain") {
        table.sets.at(services).elements.clear();
        const std::string chain = service_chain_name("svc", IpFamily::kV4, plan.services[0]);
        REQUIRE(table.chains.erase(chain) == 1);
    }
    SECTION("a deleted table") {
        kernel.tables.erase(kTableName);
    }
    SECTION("a foreign chain, and a set of ours with a foreign type") {
        table.chains["intruder"].name = "intruder";
        table.sets.at(hairpin_set(IpFamily::kV4)).unknown = true;
    }
    REQUIRE((!kernel.table() || actual(kernel) != expected(plan)));
    CHECK(synced(*backend, plan, nullptr).full);
    CHECK(actual(kernel) == expected(plan));
}

TEST_CASE("backend: the periodic check sees a table removed or replaced, and nothing else") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = numbered(sample_plan());
    auto unsynced = backend->kernel_intact();
    REQUIRE(unsynced);
    CHECK_FALSE(unsynced.value());  // nothing applied yet
    synced(*backend, before, nullptr);
    const Plan after = with_moved_endpoint(before);
    synced(*backend, after, &before);  // incremental syncs keep the table
    auto intact = backend->kernel_intact();
    REQUIRE(intact);
    CHECK(intact.value());

    SECTION("a deleted table (a flushed ruleset)") {
        kernel.tables.erase(kTableName);
        kernel.handles.erase(kTableName);
    }
    SECTION("the table deleted and restored from a dump: another handle") {
        kernel.handles[kTableName] = kernel.next_handle++;
    }
    SECTION("a flushed table: every chain's rules gone") {
        for (auto& [name, chain] : kernel.table()->chains) chain.rules.clear();
    }
    SECTION("one base chain flushed") {
        size_t flushed = 0;
        for (auto& [name, chain] : kernel.table()->chains) {
            if (chain.hook && !chain.rules.empty() && flushed++ == 0) chain.rules.clear();
        }
        REQUIRE(flushed > 0);
    }
    auto drifted = backend->kernel_intact();
    REQUIRE(drifted);
    CHECK_FALSE(drifted.value());
    // The full sync the caller then runs makes the table right and the check
    // content again.
    CHECK(synced(*backend, after, nullptr).full);
    CHECK(actual(kernel) == expected(after));
    auto repaired = backend->kernel_intact();
    REQUIRE(repaired);
    CHECK(repaired.value());
}

TEST_CASE("backend: the periodic check does not read elements: their drift waits for a full sync") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan plan = numbered(sample_plan());
    synced(*backend, plan, nullptr);
    kernel.table()->sets.at(services_map(IpFamily::kV4)).elements.clear();
    auto intact = backend->kernel_intact();
    REQUIRE(intact);
    CHECK(intact.value());
    CHECK(synced(*backend, plan, nullptr).full);
    CHECK(actual(kernel) == expected(plan));
}

TEST_CASE("backend: an incremental batch the drifted kernel refuses is repaired by the fallback") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = numbered(sample_plan());
    synced(*backend, before, nullptr);
    // Someone deleted web's backend elements: deleting the changed one fails.
    for (auto& [name, set] : kernel.table()->sets) {
        if (set.layout == SetLayout::kBackendsByAddress) set.elements.clear();
    }
    const Plan after = with_moved_endpoint(before);
    CHECK(synced(*backend, after, &before).full);
    CHECK(actual(kernel) == expected(after));
}

TEST_CASE("backend: a restarted backend adopts the table and keeps the affinity entries") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    const Plan plan = numbered(sample_plan());
    synced(*make_backend(options(), {kernel.opener(), conntrack.table()}), plan, nullptr);
    // The kernel's own entries: a client pinned to api's first endpoint.
    ElementKey client;
    client.a = ip("10.244.5.5");
    client.b = ip("10.96.0.11");
    client.proto = IPPROTO_TCP;
    client.port = 80;
    kernel.table()
        ->sets.at(affinity_map(IpFamily::kV4))
        .elements.insert_or_assign(client, Verdict(VerdictKind::kNone, {}, ip("10.244.1.8"), 9090));
    const std::string before = actual(kernel);

    auto restarted = make_backend(options(), {kernel.opener(), conntrack.table()});
    CHECK(synced(*restarted, plan, nullptr).full);
    CHECK(actual(kernel) == before);
    CHECK(before.find("10.244.5.5 . 10.96.0.11") != std::string::npos);
}

TEST_CASE("backend: cleanup removes only switchboard's table and is idempotent") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    kernel.tables["other"].chains["c"].name = "c";
    kernel.tables["switchboard-dns"].chains["c"].name = "c";
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan plan = numbered(sample_plan());
    synced(*backend, plan, nullptr);
    REQUIRE(backend->cleanup());
    CHECK(kernel.table() == nullptr);
    REQUIRE(backend->cleanup());
    CHECK(kernel.table() == nullptr);
    CHECK(kernel.tables.count("other") == 1);
    CHECK(kernel.tables.count("switchboard-dns") == 1);
    // Usable again: what it synced before is gone, so the next sync is full
    // even with a previous plan.
    const Plan after = with_moved_endpoint(plan);
    CHECK(synced(*backend, after, &plan).full);
    CHECK(actual(kernel) == expected(after));
}

// api (10.96.0.11:80, ClientIP affinity) has endpoints 10.244.1.8 and 10.244.2.8
// (:9090). Pins a client to one of them in the kernel's affinity map, as a
// packet through api's chain would.
void pin(FakeKernel& kernel, const char* client, const char* endpoint_ip) {
    ElementKey k;
    k.a = ip(client);
    k.b = ip("10.96.0.11");
    k.proto = IPPROTO_TCP;
    k.port = 80;
    kernel.table()
        ->sets.at(affinity_map(IpFamily::kV4))
        .elements.insert_or_assign(k, Verdict(VerdictKind::kNone, {}, ip(endpoint_ip), 9090));
}

size_t affinity_entries(FakeKernel& kernel) {
    return kernel.table()->sets.at(affinity_map(IpFamily::kV4)).elements.size();
}

TEST_CASE(
    "backend: affinity entries of a departed endpoint are deleted, others kept, in any sync") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = numbered(sample_plan());
    synced(*backend, before, nullptr);
    pin(kernel, "10.244.5.5", "10.244.1.8");
    pin(kernel, "10.244.5.6", "10.244.2.8");
    pin(kernel, "10.244.5.7", "10.244.2.8");

    SECTION("a sync changing no affinity service port checks nothing; a full one checks all") {
        // An entry no rule would make: only a check of the whole table deletes it.
        pin(kernel, "10.244.5.8", "10.244.9.9");
        const Plan moved = with_moved_endpoint(before);
        CHECK_FALSE(synced(*backend, moved, &before).full);
        CHECK(affinity_entries(kernel) == 4);
        CHECK(synced(*backend, moved, nullptr).full);
        CHECK(affinity_entries(kernel) == 3);
    }
    Plan after = before;
    after.revision = next_plan_revision();
    after.changes = PlanChanges{before.revision, {{"default", "api"}}};
    ServicePortPlan& api = after.services[index_of(after, "api")];
    // How `after` is synced: incrementally, by a periodic full resync, or by
    // the first sync of a restarted daemon (the change made while it was down).
    const auto sync_after = [&](const char* how) {
        const std::string way = how;
        if (way == "incremental") {
            CHECK_FALSE(synced(*backend, after, &before).full);
        } else if (way == "full resync") {
            CHECK(synced(*backend, after, nullptr).full);
        } else {
            auto restarted = make_backend(options(), {kernel.opener(), conntrack.table()});
            CHECK(synced(*restarted, after, nullptr).full);
        }
    };
    for (const char* how : {"incremental", "full resync", "restart"}) {
        SECTION(std::string("an endpoint removed: ") + how) {
            api.cluster_endpoints.erase(api.cluster_endpoints.begin());
            api.local_endpoints.clear();
            sync_after(how);
            const std::string now = actual(kernel);
            CHECK(now.find("10.244.5.5 . 10.96.0.11") == std::string::npos);
            CHECK(now.find("10.244.5.6 . 10.96.0.11") != std::string::npos);
            CHECK(now.find("10.244.5.7 . 10.96.0.11") != std::string::npos);
        }
        SECTION(std::string("affinity turned off, every entry goes: ") + how) {
            api.session_affinity = {};
            sync_after(how);
            CHECK(affinity_entries(kernel) == 0);
        }
        SECTION(std::string("the ClusterIP taken by a new Service, every entry goes: ") + how) {
            api.service = "api-2";
            api.cluster_endpoints = {endpoint("10.244.2.80", 9090, false)};
            api.local_endpoints.clear();
            after.changes =
                PlanChanges{before.revision, {{"default", "api"}, {"default", "api-2"}}};
            sync_after(how);
            CHECK(affinity_entries(kernel) == 0);
        }
        SECTION(std::string("nothing departed: the entries stay: ") + how) {
            api.node_port = 30012;
            sync_after(how);
            CHECK(affinity_entries(kernel) == 3);
        }
    }
}

TEST_CASE("backend: stale netlink answers are reported once, by the sync after them") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan plan = numbered(sample_plan());
    kernel.stale_answers = 2;
    CHECK(synced(*backend, plan, nullptr).stale_netlink_messages == 2);
    CHECK(synced(*backend, plan, &plan).stale_netlink_messages == 0);
    kernel.stale_answers = 3;
    CHECK(synced(*backend, plan, &plan).stale_netlink_messages == 1);
}

namespace {

// sample_plan() with default/dns:dns-udp: UDP on 10.96.0.53:53 and NodePort
// 30053, served by 10.244.1.9:53 and 10.244.2.9:53.
Plan udp_plan() {
    const Plan tcp = sample_plan();
    std::vector<ServicePortPlan> ports(tcp.services.begin(), tcp.services.end());
    ServicePortPlan udp =
        web({endpoint("10.244.1.9", 53, true), endpoint("10.244.2.9", 53, false)});
    udp.service = "dns";
    udp.port_name = "dns-udp";
    udp.protocol = Protocol::kUDP;
    udp.cluster_ips = {ip("10.96.0.53")};
    udp.port = 53;
    udp.node_port = 30053;
    ports.insert(ports.begin() + static_cast<std::ptrdiff_t>(index_of(tcp, "dns")) + 1, udp);
    return numbered(plan_on_node_a(std::move(ports)));
}

const UdpFlow kLive = udp_entry("10.96.0.53", 53, "10.244.1.9", 53, 40000);
const UdpFlow kToLeaving = udp_entry("10.96.0.53", 53, "10.244.2.9", 53, 40001);
const UdpFlow kNodePortToLeaving = udp_entry("192.168.1.10", 30053, "10.244.2.9", 53, 40002);
const UdpFlow kRemovedEndpoint = udp_entry("10.96.0.53", 53, "10.244.3.9", 53, 40003);
const UdpFlow kNotAService = udp_entry("10.96.0.99", 53, "10.244.5.5", 53, 40004);

}  // namespace

TEST_CASE("backend: after every sync the UDP flows of removed endpoints are deleted, no other") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    conntrack.flows[IpFamily::kV4] = {kLive, kToLeaving, kNodePortToLeaving, kRemovedEndpoint,
                                      kNotAService};
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan before = udp_plan();

    const SyncStats first = synced(*backend, before, nullptr);

    CHECK(first.full);
    CHECK(conntrack.deleted == std::vector<UdpFlow>{kRemovedEndpoint});
    REQUIRE(first.conntrack.size() == 2);
    CHECK(first.conntrack[0].ok);
    CHECK(first.conntrack[0].deleted == 1);

    // 10.244.2.9 leaves dns-udp, as the planner derives it.
    Plan after = before;
    after.revision = next_plan_revision();
    after.changes = PlanChanges{before.revision, {{"default", "dns"}}};
    ServicePortPlan& udp = after.services[index_of(before, "dns") + 1];
    REQUIRE(udp.port_name == "dns-udp");
    udp.cluster_endpoints.pop_back();

    const SyncStats step = synced(*backend, after, &before);

    CHECK_FALSE(step.full);
    CHECK(conntrack.deleted ==
          std::vector<UdpFlow>{kRemovedEndpoint, kToLeaving, kNodePortToLeaving});
    CHECK(conntrack.flows[IpFamily::kV4] == std::vector<UdpFlow>{kLive, kNotAService});
    CHECK(step.conntrack[0].ok);
    CHECK(step.conntrack[0].deleted == 2);
}

TEST_CASE("backend: a failed conntrack deletion is reported by the sync and retried by the next") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    conntrack.flows[IpFamily::kV4] = {kLive, kRemovedEndpoint};
    conntrack.fail_deletions(EPERM);
    auto backend = make_backend(options(), {kernel.opener(), conntrack.table()});
    const Plan plan = udp_plan();

    const SyncStats first = synced(*backend, plan, nullptr);  // the rules are in all the same

    REQUIRE(first.conntrack.size() == 2);
    CHECK_FALSE(first.conntrack[0].ok);
    CHECK(first.conntrack[0].error == "conntrack: delete: Operation not permitted");
    CHECK(conntrack.flows[IpFamily::kV4] == std::vector<UdpFlow>{kLive, kRemovedEndpoint});
    CHECK(actual(kernel) == expected(plan));

    const SyncStats second = synced(*backend, plan, &plan);  // nothing changed: incremental

    CHECK_FALSE(second.full);
    CHECK(second.conntrack[0].ok);
    CHECK(second.conntrack[0].deleted == 1);
    CHECK(conntrack.flows[IpFamily::kV4] == std::vector<UdpFlow>{kLive});
}

TEST_CASE("backend: a restart deletes the DNATed UDP flows of a Service deleted meanwhile") {
    FakeKernel kernel;
    FakeConntrack conntrack;
    synced(*make_backend(options(), {kernel.opener(), conntrack.table()}), udp_plan(), nullptr);
    const UdpFlow undnated = udp_entry("10.96.0.53", 53, "10.96.0.53", 53, 40005);
    conntrack.flows[IpFamily::kV4] = {kLive, kToLeaving, kNodePortToLeaving, undnated,
                                      kNotAService};

    // default/dns:dns-udp went while no daemon ran: only the table still knows it.
    auto restarted = make_backend(options(), {kernel.opener(), conntrack.table()});
    synced(*restarted, numbered(sample_plan()), nullptr);

    CHECK(conntrack.deleted == std::vector<UdpFlow>{kLive, kToLeaving, kNodePortToLeaving});
    CHECK(conntrack.flows[IpFamily::kV4] == std::vector<UdpFlow>{undnated, kNotAService});

    // Judged once: the next sync leaves a later flow to the old address alone.
    conntrack.deleted.clear();
    conntrack.flows[IpFamily::kV4] = {kLive};
    synced(*restarted, numbered(sample_plan()), nullptr);
    CHECK(conntrack.deleted.empty());
}
