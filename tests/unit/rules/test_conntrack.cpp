// The UDP conntrack reconciler (rules/conntrack.h), from a whole plan:
// which flows are stale, as kube-proxy's CleanStaleEntries decides, with
// switchboard's stricter endpoint match (address and port); and the
// reconcile over a scripted conntrack table (tests/unit/fake_conntrack.h):
// what is deleted, and how failures are reported; and the reconciler that
// keeps its targets from one plan to the next (the same deletions).
#include <catch.hpp>

#include <cerrno>
#include <map>
#include <set>
#include <vector>

#include "rules/conntrack.h"
#include "tests/unit/fake_conntrack.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using sb::rules::testing::FakeConntrack;
using sb::rules::testing::ip;
using sb::rules::testing::udp_entry;

namespace {

Endpoint endpoint(const char* address, uint16_t port) {
    Endpoint e;
    e.ip = ip(address);
    e.port = port;
    e.ready = e.serving = true;
    return e;
}

// A UDP DNS-like port: 10.96.0.10:53 -> 10.244.0.5:5353 and 10.244.0.6:5353,
// external IP 192.0.2.10, NodePort 30053.
ServicePortPlan udp_port() {
    ServicePortPlan p;
    p.ns = "kube-system";
    p.service = "dns";
    p.port_name = "dns";
    p.protocol = Protocol::kUDP;
    p.cluster_ips = {ip("10.96.0.10")};
    p.external_ips = {ip("192.0.2.10")};
    p.port = 53;
    p.node_port = 30053;
    p.cluster_endpoints = {endpoint("10.244.0.5", 5353), endpoint("10.244.0.6", 5353)};
    return p;
}

Plan plan_with(std::vector<ServicePortPlan> ports) {
    Plan plan;
    plan.node = "node-a";
    plan.services = std::move(ports);
    return plan;
}

UdpFlow flow(const char* dst, uint16_t dport, const char* reply_src, uint16_t reply_sport) {
    UdpFlow f;
    f.orig_dst = ip(dst);
    f.orig_dport = dport;
    f.reply_src = ip(reply_src);
    f.reply_sport = reply_sport;
    return f;
}

}  // namespace

TEST_CASE("conntrack: flows to a service address are stale unless DNATed to one of its endpoints") {
    const UdpServiceTargets targets(plan_with({udp_port()}));
    CHECK_FALSE(targets.stale(flow("10.96.0.10", 53, "10.244.0.5", 5353)));
    CHECK_FALSE(targets.stale(flow("192.0.2.10", 53, "10.244.0.6", 5353)));
    // A removed endpoint (also when only its port changed).
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.244.0.9", 5353)));
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.244.0.5", 53)));
    CHECK(targets.stale(flow("192.0.2.10", 53, "10.244.0.9", 5353)));
    // Recorded before the port had endpoints: nothing DNATed it.
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.96.0.10", 53)));
    // Other ports and addresses are not the reconciler's.
    CHECK_FALSE(targets.stale(flow("10.96.0.10", 54, "10.244.0.9", 5353)));
    CHECK_FALSE(targets.stale(flow("10.96.0.11", 53, "10.244.0.9", 5353)));
}

TEST_CASE("conntrack: NodePort flows on any address are stale unless DNATed to an endpoint") {
    const UdpServiceTargets targets(plan_with({udp_port()}));
    CHECK_FALSE(targets.stale(flow("192.168.1.2", 30053, "10.244.0.5", 5353)));
    CHECK(targets.stale(flow("192.168.1.2", 30053, "10.244.0.9", 5353)));
    CHECK(targets.stale(flow("192.168.1.2", 30053, "192.168.1.2", 30053)));
}

TEST_CASE("conntrack: local and other serving endpoints count, TCP ports are left out") {
    ServicePortPlan local = udp_port();
    local.cluster_endpoints.clear();
    local.local_endpoints = {endpoint("10.244.0.7", 5353)};
    CHECK_FALSE(
        UdpServiceTargets(plan_with({local})).stale(flow("10.96.0.10", 53, "10.244.0.7", 5353)));

    // A terminating endpoint keeps its flows while ready ones exist (kube-proxy
    // keeps those of every serving endpoint), through any frontend.
    ServicePortPlan draining = udp_port();
    Endpoint terminating = endpoint("10.244.0.8", 5353);
    terminating.ready = false;
    terminating.terminating = true;
    draining.other_serving_endpoints = {terminating};
    const UdpServiceTargets targets(plan_with({draining}));
    CHECK_FALSE(targets.stale(flow("10.96.0.10", 53, "10.244.0.8", 5353)));
    CHECK_FALSE(targets.stale(flow("192.0.2.10", 53, "10.244.0.8", 5353)));
    CHECK_FALSE(targets.stale(flow("192.168.1.2", 30053, "10.244.0.8", 5353)));
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.244.0.9", 5353)));

    ServicePortPlan tcp = udp_port();
    tcp.protocol = Protocol::kTCP;
    const UdpServiceTargets tcp_only(plan_with({tcp}));
    CHECK_FALSE(tcp_only.stale(flow("10.96.0.10", 53, "10.244.0.9", 5353)));
    CHECK_FALSE(tcp_only.tracks(IpFamily::kV4));
}

TEST_CASE("conntrack: a port without endpoints loses every DNATed flow, through any frontend") {
    // kubernetes#139629: scaled to zero, the frontend rejects; a flow DNATed
    // before would keep reaching the old endpoint instead.
    ServicePortPlan empty = udp_port();
    empty.cluster_endpoints.clear();
    const UdpServiceTargets targets(plan_with({empty}));
    CHECK(targets.tracks(IpFamily::kV4));
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.244.0.5", 5353)));
    CHECK(targets.stale(flow("192.0.2.10", 53, "10.244.0.5", 5353)));
    CHECK(targets.stale(flow("192.168.1.2", 30053, "10.244.0.5", 5353)));
    // A port rewrite alone is a DNAT too.
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.96.0.10", 5353)));
    // Nothing DNATed these: they meet the rejection anyway, or are not ours
    // (a NodePort matches any address, a remote host's port too).
    CHECK_FALSE(targets.stale(flow("10.96.0.10", 53, "10.96.0.10", 53)));
    CHECK_FALSE(targets.stale(flow("198.51.100.9", 30053, "198.51.100.9", 30053)));
    CHECK_FALSE(targets.stale(flow("10.96.0.11", 53, "10.244.0.5", 5353)));
}

TEST_CASE("conntrack: a port sharing an address with a port without endpoints keeps its flows") {
    ServicePortPlan served = udp_port();
    ServicePortPlan empty = udp_port();
    empty.service = "dns-b";
    empty.cluster_ips = {ip("10.96.0.11")};
    empty.node_port = 0;
    empty.cluster_endpoints.clear();
    const UdpServiceTargets targets(plan_with({served, empty}));
    CHECK_FALSE(targets.stale(flow("192.0.2.10", 53, "10.244.0.5", 5353)));
    CHECK(targets.stale(flow("192.0.2.10", 53, "10.244.0.9", 5353)));
    CHECK(targets.stale(flow("10.96.0.11", 53, "10.244.0.5", 5353)));
}

TEST_CASE("conntrack: a family is tracked by its addresses, NodePorts count for both") {
    ServicePortPlan v6 = udp_port();
    v6.cluster_ips = {ip("fd00:10:96::10")};
    v6.external_ips.clear();
    v6.node_port = 0;
    v6.cluster_endpoints = {endpoint("fd00:10:244::5", 5353)};
    const UdpServiceTargets only_v6(plan_with({v6}));
    CHECK(only_v6.tracks(IpFamily::kV6));
    CHECK_FALSE(only_v6.tracks(IpFamily::kV4));
    CHECK(only_v6.stale(flow("fd00:10:96::10", 53, "fd00:10:244::9", 5353)));

    ServicePortPlan node_port = udp_port();
    node_port.cluster_ips.clear();
    node_port.external_ips.clear();
    CHECK(UdpServiceTargets(plan_with({node_port})).tracks(IpFamily::kV6));
}

TEST_CASE("conntrack: two ports sharing an external IP keep the flows of either's endpoints") {
    ServicePortPlan a = udp_port();
    ServicePortPlan b = udp_port();
    b.service = "dns-b";
    b.cluster_ips = {ip("10.96.0.11")};
    b.node_port = 0;
    b.cluster_endpoints = {endpoint("10.244.0.8", 5353)};
    const UdpServiceTargets targets(plan_with({a, b}));
    CHECK_FALSE(targets.stale(flow("192.0.2.10", 53, "10.244.0.5", 5353)));
    CHECK_FALSE(targets.stale(flow("192.0.2.10", 53, "10.244.0.8", 5353)));
    CHECK(targets.stale(flow("10.96.0.11", 53, "10.244.0.5", 5353)));
}

namespace {

const UdpFlow kLive = udp_entry("10.96.0.10", 53, "10.244.0.5", 5353, 40000);
const UdpFlow kRemoved = udp_entry("10.96.0.10", 53, "10.244.0.9", 5353, 40001);
const UdpFlow kNodePortRemoved = udp_entry("192.168.1.2", 30053, "10.244.0.9", 5353, 40002);
const UdpFlow kOther = udp_entry("10.96.0.99", 53, "10.244.0.9", 5353, 40003);

}  // namespace

TEST_CASE("conntrack reconcile: the stale flows are deleted, the others stay") {
    FakeConntrack fake;
    fake.flows[IpFamily::kV4] = {kLive, kRemoved, kNodePortRemoved, kOther};
    auto table = fake.table();
    const auto results = reconcile_udp_conntrack(plan_with({udp_port()}), *table);
    REQUIRE(results.size() == 2);
    CHECK(results[0].family == IpFamily::kV4);
    CHECK(results[0].ok);
    CHECK(results[0].dumped);
    CHECK(results[0].deleted == 2);
    CHECK(fake.deleted == std::vector<UdpFlow>{kRemoved, kNodePortRemoved});
    CHECK(fake.flows[IpFamily::kV4] == std::vector<UdpFlow>{kLive, kOther});
    // The NodePort makes IPv6 tracked too: it is dumped, nothing is there.
    CHECK(results[1].dumped);
    CHECK(results[1].ok);
    CHECK(fake.dumps[IpFamily::kV6] == 1);
}

TEST_CASE("conntrack reconcile: a family without tracked ports is not dumped") {
    FakeConntrack fake;
    fake.flows[IpFamily::kV4] = {kRemoved};
    ServicePortPlan tcp = udp_port();
    tcp.protocol = Protocol::kTCP;
    auto table = fake.table();
    const auto results = reconcile_udp_conntrack(plan_with({tcp}), *table);
    CHECK_FALSE(results[0].dumped);
    CHECK_FALSE(results[1].dumped);
    CHECK(fake.dumps.empty());
    CHECK(fake.deleted.empty());
}

TEST_CASE("conntrack reconcile: a flow that expired before its deletion is not an error") {
    FakeConntrack fake;
    fake.flows[IpFamily::kV4] = {kLive, kRemoved, kNodePortRemoved};
    fake.expire_before_deletion();
    auto table = fake.table();
    const auto results = reconcile_udp_conntrack(plan_with({udp_port()}), *table);
    CHECK(results[0].ok);
    CHECK(results[0].error.empty());
    CHECK(results[0].deleted == 1);
    CHECK(fake.flows[IpFamily::kV4] == std::vector<UdpFlow>{kLive});
}

TEST_CASE("conntrack reconcile: a failed deletion is reported, the next reconcile retries it") {
    FakeConntrack fake;
    fake.flows[IpFamily::kV4] = {kLive, kRemoved, kNodePortRemoved};
    fake.fail_deletions(EPERM);
    auto table = fake.table();
    const Plan plan = plan_with({udp_port()});
    const auto first = reconcile_udp_conntrack(plan, *table);
    CHECK_FALSE(first[0].ok);
    CHECK(first[0].error == "conntrack: delete: Operation not permitted");
    CHECK(first[0].deleted == 1);  // the failure stops nothing else
    CHECK(fake.deleted == std::vector<UdpFlow>{kNodePortRemoved});
    const auto second = reconcile_udp_conntrack(plan, *table);
    CHECK(second[0].ok);
    CHECK(second[0].deleted == 1);
    CHECK(fake.flows[IpFamily::kV4] == std::vector<UdpFlow>{kLive});
}

TEST_CASE("conntrack reconcile: a failed dump is reported, the flows read before it are deleted") {
    FakeConntrack fake;
    fake.flows[IpFamily::kV4] = {kRemoved, kLive, kNodePortRemoved};
    fake.fail_dump(IpFamily::kV4, ENOBUFS, 2);
    auto table = fake.table();
    const auto results = reconcile_udp_conntrack(plan_with({udp_port()}), *table);
    CHECK_FALSE(results[0].ok);
    CHECK(results[0].error == "conntrack: dump: No buffer space available");
    CHECK(fake.deleted == std::vector<UdpFlow>{kRemoved});
    CHECK(results[1].ok);  // the other family is reconciled all the same
}

namespace {

ServicePortPlan udp_service(const char* service, const char* cluster_ip,
                            std::vector<Endpoint> endpoints) {
    ServicePortPlan p = udp_port();
    p.service = service;
    p.cluster_ips = {ip(cluster_ip)};
    p.node_port = 0;
    p.cluster_endpoints = std::move(endpoints);
    return p;
}

// kube-system/dns (udp_port()), dns6 (IPv6), syslog (sharing dns's external
// IP and port), web (TCP): the plan a sequence of one-change plans starts
// from.
Plan first_plan() {
    ServicePortPlan dns6 = udp_service("dns6", "fd00:96::10", {endpoint("fd00:244::5", 5353)});
    dns6.external_ips.clear();
    ServicePortPlan syslog = udp_service("syslog", "10.96.0.20", {endpoint("10.244.0.7", 5353)});
    ServicePortPlan web = udp_service("web", "10.96.0.30", {endpoint("10.244.0.9", 5353)});
    web.protocol = Protocol::kTCP;
    Plan plan = plan_with({udp_port(), dns6, syslog, web});
    plan.revision = next_plan_revision();
    return plan;
}

// `base` with `edit` applied to its ports and a change set naming
// kube-system/`service`, as the planner derives a plan.
template <class Edit>
Plan derive(const Plan& base, const char* service, Edit edit) {
    std::vector<ServicePortPlan> ports(base.services.begin(), base.services.end());
    edit(ports);
    Plan next = plan_with(std::move(ports));
    next.revision = next_plan_revision();
    next.changes = PlanChanges{base.revision, {{"kube-system", service}}};
    return next;
}

ServicePortPlan& port_of(std::vector<ServicePortPlan>& ports, const char* service) {
    for (ServicePortPlan& p : ports) {
        if (p.service == service) return p;
    }
    FAIL("no service " << service);
    return ports.front();
}

// Every flow the plans' addresses, NodePorts and endpoints can make: to each
// address:port and NodePort, answered by each endpoint of any plan and by
// the address itself (a flow from before the port had endpoints).
std::map<IpFamily, std::vector<UdpFlow>> every_flow(const std::vector<Plan>& plans) {
    std::set<std::pair<IpAddress, uint16_t>> endpoints;
    std::set<std::pair<IpAddress, uint16_t>> addresses;
    for (const Plan& plan : plans) {
        for (const ServicePortPlan& p : plan.services) {
            for (const Endpoint& e : p.cluster_endpoints) endpoints.emplace(e.ip, e.port);
            for (const auto* list : {&p.cluster_ips, &p.external_ips}) {
                for (const IpAddress& a : *list) addresses.emplace(a, p.port);
            }
            if (p.node_port != 0) addresses.emplace(ip("192.168.1.2"), p.node_port);
        }
    }
    std::map<IpFamily, std::vector<UdpFlow>> out;
    uint16_t sport = 40000;
    for (const auto& [address, port] : addresses) {
        std::set<std::pair<IpAddress, uint16_t>> replies = endpoints;
        replies.emplace(address, port);
        for (const auto& [reply, reply_port] : replies) {
            if (reply.family() != address.family()) continue;
            UdpFlow f = udp_entry("10.244.1.5", port, "10.244.1.5", reply_port, sport++);
            f.orig_src = address.family() == IpFamily::kV4 ? ip("10.244.1.5") : ip("fd00:244::1");
            f.orig_dst = address;
            f.reply_src = reply;
            out[address.family()].push_back(f);
        }
    }
    return out;
}

// The frontends (address:port, NodePort as 0.0.0.0:port) of a plan's UDP ports.
std::set<std::pair<IpAddress, uint16_t>> frontends(const Plan& plan) {
    std::set<std::pair<IpAddress, uint16_t>> out;
    for (const ServicePortPlan& p : plan.services) {
        if (p.protocol != Protocol::kUDP) continue;
        for (const auto* list : {&p.cluster_ips, &p.external_ips, &p.load_balancer_ips}) {
            for (const IpAddress& a : *list) out.emplace(a, p.port);
        }
        if (p.node_port != 0) out.emplace(ip("0.0.0.0"), p.node_port);
    }
    return out;
}

// What a reconciler that last reconciled `before` deletes from `flows` for
// `now`: what the whole-plan reconcile of `now` deletes, and the DNATed
// flows to the frontends `before` had and `now` lacks. In dump order (IPv4
// first), as the fake records deletions.
std::vector<UdpFlow> expected_deletions(const Plan& before, const Plan& now,
                                        const std::map<IpFamily, std::vector<UdpFlow>>& flows) {
    const UdpServiceTargets targets(now);
    const auto had = frontends(before);
    const auto has = frontends(now);
    auto retired = [&](const std::pair<IpAddress, uint16_t>& frontend) {
        return had.count(frontend) && !has.count(frontend);
    };
    std::vector<UdpFlow> out;
    for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        auto it = flows.find(family);
        if (it == flows.end()) continue;
        for (const UdpFlow& f : it->second) {
            const bool dnated = f.reply_src != f.orig_dst || f.reply_sport != f.orig_dport;
            const bool gone =
                retired({f.orig_dst, f.orig_dport}) || retired({ip("0.0.0.0"), f.orig_dport});
            if (targets.stale(f) || (gone && dnated)) out.push_back(f);
        }
    }
    return out;
}

}  // namespace

TEST_CASE("conntrack reconciler: a sync after one change deletes what a rebuild deletes") {
    std::vector<Plan> plans{first_plan()};
    auto step = [&](const char* service, auto edit) {
        plans.push_back(derive(plans.back(), service, edit));
    };
    step("dns", [](auto& ports) { port_of(ports, "dns").cluster_endpoints.pop_back(); });
    step("syslog", [](auto& ports) {  // dns alone keeps the shared external IP
        ports.erase(ports.begin() + 2);
    });
    step("syslog", [](auto& ports) {
        ports.insert(ports.begin() + 2,
                     udp_service("syslog", "10.96.0.20", {endpoint("10.244.0.8", 5353)}));
    });
    step("dns", [](auto& ports) { port_of(ports, "dns").cluster_endpoints.clear(); });
    step("dns6", [](auto& ports) {
        port_of(ports, "dns6").cluster_endpoints = {endpoint("fd00:244::6", 5353)};
    });
    step("web", [](auto& ports) { port_of(ports, "web").protocol = Protocol::kUDP; });
    step("aaa", [](auto& ports) {
        ports.insert(ports.begin(),
                     udp_service("aaa", "10.96.0.40", {endpoint("10.244.0.5", 5353)}));
    });
    step("dns", [](auto& ports) {
        port_of(ports, "dns").cluster_endpoints = {endpoint("10.244.0.6", 5353)};
        port_of(ports, "dns").node_port = 30054;
    });
    step("dns", [](auto& ports) { ports.erase(ports.begin() + 1); });
    const auto flows = every_flow(plans);

    FakeConntrack fake;
    UdpConntrackReconciler reconciler(fake.table());
    for (size_t i = 0; i < plans.size(); ++i) {
        INFO("plan " << i);
        fake.flows = flows;
        fake.deleted.clear();
        const auto results = reconciler.reconcile(plans[i], i == 0 ? nullptr : &plans[i - 1]);
        CHECK(fake.deleted == expected_deletions(i == 0 ? Plan{} : plans[i - 1], plans[i], flows));
        CHECK(results[0].ok);
        CHECK(results[1].ok);
        CHECK_FALSE(fake.deleted.empty());  // every plan leaves some flows stale

        // A reconciler that rebuilds its targets from each plan deletes the same.
        FakeConntrack scratch;
        UdpConntrackReconciler rebuilt(scratch.table());
        if (i > 0) rebuilt.reconcile(plans[i - 1], nullptr);
        scratch.flows = flows;
        scratch.deleted.clear();
        rebuilt.reconcile(plans[i], nullptr);
        CHECK(scratch.deleted == fake.deleted);
    }
}

TEST_CASE("conntrack reconciler: a previous plan it did not reconcile is not trusted") {
    const Plan seen = first_plan();
    const Plan unseen = derive(seen, "dns", [](auto& ports) { ports.erase(ports.begin()); });
    const Plan now = derive(unseen, "syslog", [](auto& ports) {
        port_of(ports, "syslog").cluster_endpoints = {endpoint("10.244.0.8", 5353)};
    });
    const auto flows = every_flow({seen, unseen, now});
    FakeConntrack fake;
    UdpConntrackReconciler reconciler(fake.table());
    reconciler.reconcile(seen, nullptr);

    SECTION("the caller's previous plan skipped one") {
        fake.flows = flows;
        fake.deleted.clear();
        reconciler.reconcile(now, &unseen);
        CHECK(fake.deleted == expected_deletions(seen, now, flows));
    }
    SECTION("no previous plan") {
        fake.flows = flows;
        fake.deleted.clear();
        reconciler.reconcile(now, nullptr);
        CHECK(fake.deleted == expected_deletions(seen, now, flows));
    }
}

namespace {

const UdpFlow kUndnated = udp_entry("10.96.0.10", 53, "10.96.0.10", 53, 40004);
const UdpFlow kExternal = udp_entry("192.0.2.10", 53, "10.244.0.5", 5353, 40005);

Plan revised(std::vector<ServicePortPlan> ports) {
    Plan plan = plan_with(std::move(ports));
    plan.revision = next_plan_revision();
    return plan;
}

}  // namespace

TEST_CASE("conntrack reconciler: a deleted Service loses its DNATed flows, once") {
    // kubernetes#141371: its frontends are gone from the plan, not its flows.
    FakeConntrack fake;
    UdpConntrackReconciler reconciler(fake.table());
    const Plan with = revised({udp_port()});
    reconciler.reconcile(with, nullptr);
    const Plan without = revised({});
    fake.flows[IpFamily::kV4] = {kLive, kUndnated, kExternal, kNodePortRemoved, kOther};

    SECTION("the previous plan known") {
        reconciler.reconcile(without, &with);
    }
    SECTION("rebuilt from the whole plan") {
        reconciler.reconcile(without, nullptr);
    }
    CHECK(fake.deleted == std::vector<UdpFlow>{kLive, kExternal, kNodePortRemoved});
    CHECK(fake.flows[IpFamily::kV4] == std::vector<UdpFlow>{kUndnated, kOther});

    // Judged: a later DNATed flow to the old address is someone else's.
    fake.deleted.clear();
    fake.flows[IpFamily::kV4] = {kLive};
    reconciler.reconcile(revised({}), nullptr);
    CHECK(fake.deleted.empty());
}

TEST_CASE("conntrack reconciler: a frontend retired by a failed reconcile is judged by the next") {
    FakeConntrack fake;
    UdpConntrackReconciler reconciler(fake.table());
    const Plan with = revised({udp_port()});
    reconciler.reconcile(with, nullptr);
    const Plan without = revised({});
    fake.flows[IpFamily::kV4] = {kLive, kExternal};
    fake.fail_dump(IpFamily::kV4, ENOBUFS);
    const auto failed = reconciler.reconcile(without, &with);
    CHECK_FALSE(failed[0].ok);
    CHECK(fake.deleted.empty());

    const auto retried = reconciler.reconcile(without, &without);
    CHECK(retried[0].ok);
    CHECK(fake.deleted == std::vector<UdpFlow>{kLive, kExternal});
}

TEST_CASE(
    "conntrack reconciler: frontends the kernel DNATed before a start retire unless planned") {
    // A fresh reconciler (a daemon just started) knows only the plan; the
    // backend reads what its rules DNATed before this sync.
    ServicePortPlan syslog = udp_service("syslog", "10.96.0.20", {endpoint("10.244.0.7", 5353)});
    const UdpFlow syslog_live = udp_entry("10.96.0.20", 53, "10.244.0.7", 5353, 40010);
    const UdpFlow syslog_removed = udp_entry("10.96.0.20", 53, "10.244.0.9", 5353, 40011);
    FakeConntrack fake;
    fake.flows[IpFamily::kV4] = {kLive,  kUndnated,   kExternal,     kNodePortRemoved,
                                 kOther, syslog_live, syslog_removed};
    UdpConntrackReconciler reconciler(fake.table());
    UdpFrontends dnated;
    dnated.addresses = {{ip("10.96.0.10"), 53}, {ip("192.0.2.10"), 53}, {ip("10.96.0.20"), 53}};
    dnated.node_ports = {30053};
    const auto results = reconciler.reconcile(revised({syslog}), nullptr, nullptr, &dnated);
    CHECK(results[0].ok);
    // syslog shares the external IP and port: dns's flow there is judged by
    // syslog's endpoints.
    CHECK(fake.deleted == std::vector<UdpFlow>{kLive, kExternal, kNodePortRemoved, syslog_removed});
}

TEST_CASE("conntrack targets: a frontend taken out and put back is not retired") {
    const ServicePortPlan dns = udp_port();
    UdpServiceTargets targets;
    targets.add(dns);
    targets.remove(dns);
    CHECK(targets.stale(flow("10.96.0.10", 53, "10.244.0.5", 5353)));
    CHECK(targets.stale(flow("192.168.1.2", 30053, "10.244.0.5", 5353)));
    CHECK(targets.tracks(IpFamily::kV6));  // a retired NodePort counts for both families
    targets.add(dns);
    CHECK_FALSE(targets.stale(flow("10.96.0.10", 53, "10.244.0.5", 5353)));
    CHECK_FALSE(targets.stale(flow("192.168.1.2", 30053, "10.244.0.5", 5353)));
    targets.remove(dns);
    targets.forget_retired(IpFamily::kV4);
    CHECK_FALSE(targets.stale(flow("10.96.0.10", 53, "10.244.0.5", 5353)));
    CHECK_FALSE(targets.tracks(IpFamily::kV4));
    CHECK(targets.tracks(IpFamily::kV6));  // its NodePort until IPv6 is judged too
}
