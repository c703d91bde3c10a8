// The UDP conntrack reconciler (rules/conntrack.h), from a whole plan:
// which flows are stale, as kube-proxy's CleanStaleEntries decides, with
// switchboard's stricter endpoint match (address and port); and the
// reconcile over a scripted conntrack table (tests/unit/fake_conntrack.h):
// what is deleted, and how failures are reported.
#include <catch.hpp>

#include <cerrno>

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

TEST_CASE("conntrack: local endpoints count, ports without endpoints and TCP ports are left out") {
    ServicePortPlan local = udp_port();
    local.cluster_endpoints.clear();
    local.local_endpoints = {endpoint("10.244.0.7", 5353)};
    CHECK_FALSE(
        UdpServiceTargets(plan_with({local})).stale(flow("10.96.0.10", 53, "10.244.0.7", 5353)));

    ServicePortPlan empty = udp_port();
    empty.cluster_endpoints.clear();
    const UdpServiceTargets none(plan_with({empty}));
    CHECK_FALSE(none.stale(flow("10.96.0.10", 53, "10.96.0.10", 53)));
    CHECK_FALSE(none.tracks(IpFamily::kV4));

    ServicePortPlan tcp = udp_port();
    tcp.protocol = Protocol::kTCP;
    const UdpServiceTargets tcp_only(plan_with({tcp}));
    CHECK_FALSE(tcp_only.stale(flow("10.96.0.10", 53, "10.244.0.9", 5353)));
    CHECK_FALSE(tcp_only.tracks(IpFamily::kV4));
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
    ServicePortPlan empty = udp_port();
    empty.cluster_endpoints.clear();
    auto table = fake.table();
    const auto results = reconcile_udp_conntrack(plan_with({empty}), *table);
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
