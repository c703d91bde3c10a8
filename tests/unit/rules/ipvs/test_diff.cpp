// The diff against a kernel listing: which virtual servers are
// switchboard's, the Ops and their order, graceful removal of real servers,
// and, over the fake kernel, that applying the Ops reaches the rendered
// state. Also the fake kernel's own answers, which the backend's tests rely
// on.
#include <netinet/in.h>
#include <catch.hpp>

#include <cerrno>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "rules/ipvs/diff.h"
#include "tests/unit/rules/ipvs/fake_kernel.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules::ipvs;
using sb::rules::ipvs::testing::FakeKernel;
using sb::rules::testing::ip;
using sb::rules::testing::prefix;
using namespace std::chrono_literals;

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point kStart = Clock::time_point{} + 1000s;
constexpr std::chrono::seconds kBound = 60s;

ServiceKey key(const char* address, uint16_t port, uint8_t protocol = IPPROTO_TCP) {
    return ServiceKey{ip(address), protocol, port};
}

RealServer rs(const char* address, uint16_t port, uint32_t weight = 1, uint32_t active = 0) {
    RealServer out;
    out.address = ip(address);
    out.port = port;
    out.weight = weight;
    out.active_connections = active;
    return out;
}

Service service(ServiceKey k, std::vector<RealServer> destinations, const char* scheduler = "rr") {
    Service s;
    s.server.key = k;
    s.server.scheduler = scheduler;
    s.destinations = std::move(destinations);
    return s;
}

IpvsState state_of(std::vector<Service> services) {
    IpvsState out;
    for (Service& s : services) out.emplace(s.server.key, std::move(s));
    return out;
}

// "add service 10.96.0.10:80", "edit destination 10.96.0.10:80 10.244.1.7:8080 w0".
std::string op_text(const Op& op) {
    std::string out = std::string(to_string(op.kind)) + " " + op.server.key.address.to_string() +
                      ":" + std::to_string(op.server.key.port);
    switch (op.kind) {
        case OpKind::kAddService:
        case OpKind::kEditService:
        case OpKind::kDeleteService:
            return out;
        case OpKind::kAddDestination:
        case OpKind::kEditDestination:
            return out + " " + op.destination.address.to_string() + ":" +
                   std::to_string(op.destination.port) + " w" +
                   std::to_string(op.destination.weight);
        case OpKind::kDeleteDestination:
            return out + " " + op.destination.address.to_string() + ":" +
                   std::to_string(op.destination.port);
    }
    return out;
}

std::vector<std::string> describe(const std::vector<Op>& ops) {
    std::vector<std::string> out;
    for (const Op& op : ops) out.push_back(op_text(op));
    return out;
}

const ServiceKey kWeb = key("10.96.0.10", 80);
const IpvsState kWebState =
    state_of({service(kWeb, {rs("10.244.1.7", 8080), rs("10.244.2.7", 8080)})});

}  // namespace

TEST_CASE("diff: equal states give no Op", "[diff]") {
    Drains drains;
    REQUIRE(diff(kWebState, kWebState, drains, kStart, kBound).empty());
    REQUIRE(diff({}, {}, drains, kStart, kBound).empty());
    REQUIRE(drains.started.empty());
    // Connection counts are not compared.
    IpvsState busy = kWebState;
    busy.at(kWeb).destinations[0].active_connections = 7;
    busy.at(kWeb).destinations[1].inactive_connections = 3;
    REQUIRE(diff(kWebState, busy, drains, kStart, kBound).empty());
}

TEST_CASE("diff: a missing virtual server is added, then its real servers", "[diff]") {
    Drains drains;
    const IpvsState desired =
        state_of({service(kWeb, {rs("10.244.1.7", 8080)}),
                  service(key("10.96.0.11", 53, IPPROTO_UDP), {rs("10.244.3.3", 53)})});
    REQUIRE(describe(diff(desired, {}, drains, kStart, kBound)) ==
            std::vector<std::string>{"add service 10.96.0.10:80", "add service 10.96.0.11:53",
                                     "add destination 10.96.0.10:80 10.244.1.7:8080 w1",
                                     "add destination 10.96.0.11:53 10.244.3.3:53 w1"});
}

TEST_CASE("diff: other settings edit the virtual server", "[diff]") {
    Drains drains;
    IpvsState current = kWebState;
    SECTION("scheduler") {
        current.at(kWeb).server.scheduler = "lc";
    }
    SECTION("persistence") {
        current.at(kWeb).server.persistent = true;
        current.at(kWeb).server.timeout_seconds = 10800;
    }
    SECTION("persistence timeout") {
        IpvsState desired = kWebState;
        desired.at(kWeb).server.persistent = current.at(kWeb).server.persistent = true;
        desired.at(kWeb).server.timeout_seconds = 600;
        current.at(kWeb).server.timeout_seconds = 10800;
        const std::vector<Op> ops = diff(desired, current, drains, kStart, kBound);
        REQUIRE(describe(ops) == std::vector<std::string>{"edit service 10.96.0.10:80"});
        REQUIRE(ops[0].server.timeout_seconds == 600);
        return;
    }
    const std::vector<Op> ops = diff(kWebState, current, drains, kStart, kBound);
    REQUIRE(describe(ops) == std::vector<std::string>{"edit service 10.96.0.10:80"});
    REQUIRE(ops[0].server == kWebState.at(kWeb).server);
}

TEST_CASE("diff: the timeout of a service without persistence is not compared", "[diff]") {
    Drains drains;
    IpvsState current = kWebState;
    current.at(kWeb).server.timeout_seconds = 300;
    REQUIRE(diff(kWebState, current, drains, kStart, kBound).empty());
}

TEST_CASE("diff: a virtual server no longer wanted is deleted with its real servers", "[diff]") {
    const IpvsState current = state_of({service(kWeb, {rs("10.244.1.7", 8080, 0, 5)}),
                                        service(key("10.96.0.11", 80), {rs("10.244.3.3", 80)})});
    Drains drains;
    drains.started[DrainKey{kWeb, ip("10.244.1.7"), 8080}] = kStart - 10s;
    const IpvsState desired = state_of({service(key("10.96.0.11", 80), {rs("10.244.3.3", 80)})});
    REQUIRE(describe(diff(desired, current, drains, kStart, kBound)) ==
            std::vector<std::string>{"delete service 10.96.0.10:80"});
    REQUIRE(drains.started.empty());
    REQUIRE(draining(drains).empty());
}

TEST_CASE("diff: missing real servers are added, other weights edited", "[diff]") {
    Drains drains;
    const IpvsState current = state_of({service(kWeb, {rs("10.244.1.7", 8080, 5)})});
    REQUIRE(describe(diff(kWebState, current, drains, kStart, kBound)) ==
            std::vector<std::string>{"add destination 10.96.0.10:80 10.244.2.7:8080 w1",
                                     "edit destination 10.96.0.10:80 10.244.1.7:8080 w1"});
}

TEST_CASE("diff: a TCP real server drains at weight 0, then goes with its last connection",
          "[diff]") {
    Drains drains;
    const IpvsState desired = state_of({service(kWeb, {rs("10.244.1.7", 8080)})});
    IpvsState current = kWebState;
    current.at(kWeb).destinations[1].active_connections = 2;
    REQUIRE(describe(diff(desired, current, drains, kStart, kBound)) ==
            std::vector<std::string>{"edit destination 10.96.0.10:80 10.244.2.7:8080 w0"});
    const DrainKey drained{kWeb, ip("10.244.2.7"), 8080};
    REQUIRE(drains.started == std::map<DrainKey, Clock::time_point>{{drained, kStart}});
    REQUIRE(draining(drains) == std::vector{kWeb});

    // At weight 0 with connections open, within the bound: nothing to do.
    current.at(kWeb).destinations[1].weight = 0;
    REQUIRE(diff(desired, current, drains, kStart + 30s, kBound).empty());
    REQUIRE(drains.started.at(drained) == kStart);

    SECTION("the last connection ends") {
        current.at(kWeb).destinations[1].active_connections = 0;
        // Closing connections do not hold it.
        current.at(kWeb).destinations[1].inactive_connections = 4;
        REQUIRE(describe(diff(desired, current, drains, kStart + 31s, kBound)) ==
                std::vector<std::string>{"delete destination 10.96.0.10:80 10.244.2.7:8080"});
    }
    SECTION("the bound passes with connections open") {
        REQUIRE(diff(desired, current, drains, kStart + kBound - 1s, kBound).empty());
        REQUIRE(describe(diff(desired, current, drains, kStart + kBound, kBound)) ==
                std::vector<std::string>{"delete destination 10.96.0.10:80 10.244.2.7:8080"});
    }
    REQUIRE(drains.started.empty());
    REQUIRE(draining(drains).empty());
}

TEST_CASE("diff: a weight-0 real server without a drain record starts its drain now", "[diff]") {
    // After a restart, the kernel still has switchboard's draining servers.
    Drains drains;
    const IpvsState desired = state_of({service(kWeb, {rs("10.244.1.7", 8080)})});
    IpvsState current =
        state_of({service(kWeb, {rs("10.244.1.7", 8080), rs("10.244.2.7", 8080, 0, 3),
                                 rs("10.244.3.7", 8080, 0, 0)})});
    REQUIRE(describe(diff(desired, current, drains, kStart, kBound)) ==
            std::vector<std::string>{"delete destination 10.96.0.10:80 10.244.3.7:8080"});
    const DrainKey drained{kWeb, ip("10.244.2.7"), 8080};
    REQUIRE(drains.started == std::map<DrainKey, Clock::time_point>{{drained, kStart}});
    current.at(kWeb).destinations.pop_back();
    REQUIRE(diff(desired, current, drains, kStart + kBound - 1s, kBound).empty());
    REQUIRE(describe(diff(desired, current, drains, kStart + kBound, kBound)) ==
            std::vector<std::string>{"delete destination 10.96.0.10:80 10.244.2.7:8080"});
}

TEST_CASE("diff: UDP and SCTP real servers are deleted at once", "[diff]") {
    for (const uint8_t protocol : {uint8_t{IPPROTO_UDP}, uint8_t{IPPROTO_SCTP}}) {
        INFO(protocol_name(protocol));
        const ServiceKey k = key("10.96.0.10", 53, protocol);
        const IpvsState desired =
            state_of({service(k, {rs("10.244.1.7", 53), rs("10.244.3.7", 53)})});
        const IpvsState current =
            state_of({service(k, {rs("10.244.1.7", 53), rs("10.244.2.7", 53, 1, 9)})});
        Drains drains;
        // The replacement first: the service never lacks a real server.
        REQUIRE(describe(diff(desired, current, drains, kStart, kBound)) ==
                std::vector<std::string>{"add destination 10.96.0.10:53 10.244.3.7:53 w1",
                                         "delete destination 10.96.0.10:53 10.244.2.7:53"});
        REQUIRE(drains.started.empty());
    }
}

TEST_CASE("diff: a draining real server wanted again gets its weight back", "[diff]") {
    Drains drains;
    const DrainKey drained{kWeb, ip("10.244.2.7"), 8080};
    drains.started[drained] = kStart - 10s;
    IpvsState current = kWebState;
    current.at(kWeb).destinations[1].weight = 0;
    current.at(kWeb).destinations[1].active_connections = 1;
    REQUIRE(describe(diff(kWebState, current, drains, kStart, kBound)) ==
            std::vector<std::string>{"edit destination 10.96.0.10:80 10.244.2.7:8080 w1"});
    REQUIRE(drains.started.empty());
}

TEST_CASE("diff: service deletes, then service adds and edits, then destination changes",
          "[diff]") {
    const ServiceKey a = key("10.96.0.1", 443);
    const ServiceKey b = key("10.96.0.2", 80);
    const ServiceKey c = key("10.96.0.3", 80);
    const ServiceKey d = key("10.96.0.4", 80);
    const IpvsState current = state_of({
        service(a, {rs("10.244.1.1", 6443), rs("10.244.1.2", 6443)}),
        service(c, {}),
        service(d, {rs("10.244.4.4", 80)}, "lc"),
    });
    const IpvsState desired = state_of({
        service(a, {rs("10.244.1.2", 6443), rs("10.244.1.3", 6443)}),
        service(b, {rs("10.244.2.2", 80)}),
        service(d, {rs("10.244.4.4", 80)}),
    });
    Drains drains;
    REQUIRE(describe(diff(desired, current, drains, kStart, kBound)) ==
            std::vector<std::string>{
                "delete service 10.96.0.3:80",
                "add service 10.96.0.2:80",
                "edit service 10.96.0.4:80",
                "add destination 10.96.0.1:443 10.244.1.3:6443 w1",
                "edit destination 10.96.0.1:443 10.244.1.1:6443 w0",
                "add destination 10.96.0.2:80 10.244.2.2:80 w1",
            });
}

TEST_CASE("diff: ownership leaves other virtual servers alone", "[diff]") {
    Ownership ownership;
    ownership.link_addresses = {ip("10.96.0.10"), ip("10.96.0.12")};
    ownership.node_port_addresses = {ip("192.168.1.10"), ip("192.168.9.10")};
    ownership.excluded = {prefix("192.168.9.0/24"), prefix("10.96.0.12/32")};
    REQUIRE(owned(kWeb, ownership));
    REQUIRE(owned(key("192.168.1.10", 30080), ownership));
    REQUIRE_FALSE(owned(key("10.96.0.11", 80), ownership));       // a user's address
    REQUIRE_FALSE(owned(key("192.168.9.10", 30080), ownership));  // excluded
    REQUIRE_FALSE(owned(key("10.96.0.12", 80), ownership));       // on the link, but excluded

    const Service user = service(key("10.96.0.11", 80), {rs("172.16.0.1", 80)}, "wrr");
    const Service excluded = service(key("192.168.9.10", 30080), {rs("172.16.0.2", 80)});
    const Service stale = service(key("192.168.1.10", 30080), {rs("10.244.1.7", 8080)});
    const IpvsState listing = state_of({kWebState.at(kWeb), user, excluded, stale});
    const IpvsState mine = owned_part(listing, ownership);
    REQUIRE(to_ipvsadm_text(mine) == to_ipvsadm_text(state_of({kWebState.at(kWeb), stale})));

    FakeKernel kernel(listing);
    Drains drains;
    for (const Op& op : diff(kWebState, mine, drains, kStart, kBound)) REQUIRE(kernel.apply(op));
    REQUIRE(describe(kernel.applied()) ==
            std::vector<std::string>{"delete service 192.168.1.10:30080"});
    REQUIRE(to_ipvsadm_text(kernel.table()) ==
            to_ipvsadm_text(state_of({kWebState.at(kWeb), user, excluded})));
}

namespace {

// A state over small pools of addresses, ports and endpoints, so that two
// of them share some virtual and real servers and differ in others.
IpvsState random_state(std::mt19937& random) {
    auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
    const std::vector<const char*> addresses = {"10.96.0.1", "10.96.0.2", "10.96.0.3", "fd00:96::1",
                                                "192.168.1.10"};
    const std::vector<uint8_t> protocols = {IPPROTO_TCP, IPPROTO_UDP, IPPROTO_SCTP};
    const std::vector<const char*> schedulers = {"rr", "lc", "sh"};
    IpvsState out;
    for (int i = pick(7); i > 0; --i) {
        const char* address = addresses[pick(static_cast<int>(addresses.size()))];
        Service s = service(key(address, static_cast<uint16_t>(80 + pick(2)),
                                protocols[pick(static_cast<int>(protocols.size()))]),
                            {}, schedulers[pick(static_cast<int>(schedulers.size()))]);
        if (pick(3) == 0) {
            s.server.persistent = true;
            s.server.timeout_seconds = pick(2) == 0 ? 10800 : 600;
        }
        const bool v6 = s.server.key.address.is_v6();
        for (int e = 0; e < 5; ++e) {
            if (pick(2) == 0) continue;
            const std::string endpoint = (v6 ? "fd00:244::" : "10.244.0.") + std::to_string(e + 1);
            s.destinations.push_back(
                rs(endpoint.c_str(), 8080, pick(4) == 0 ? 0 : 1, static_cast<uint32_t>(pick(3))));
        }
        out[s.server.key] = std::move(s);
    }
    return out;
}

}  // namespace

TEST_CASE("diff: applying the Ops to a kernel holding current reaches desired", "[diff]") {
    std::mt19937 random(12);
    for (int round = 0; round < 200; ++round) {
        const IpvsState desired_raw = random_state(random);
        // render() gives weight 1 only.
        IpvsState desired = desired_raw;
        for (auto& [_, s] : desired) {
            for (RealServer& r : s.destinations) {
                r.weight = 1;
                r.active_connections = 0;
            }
        }
        FakeKernel kernel(random_state(random));
        INFO("round " << round << "\ncurrent:\n"
                      << to_ipvsadm_text(kernel.table()) << "desired:\n"
                      << to_ipvsadm_text(desired));
        Drains drains;
        Clock::time_point now = kStart;
        // Each pass: the Ops apply without a refusal; draining servers end
        // within the bound, so three passes (weight 0, wait, delete) do.
        for (int pass = 0; pass < 3; ++pass) {
            for (const Op& op : diff(desired, *kernel.list(), drains, now, kBound)) {
                INFO(op_text(op));
                REQUIRE(kernel.apply(op));
            }
            now += kBound;
        }
        REQUIRE(to_ipvsadm_text(kernel.table()) == to_ipvsadm_text(desired));
        REQUIRE(diff(desired, *kernel.list(), drains, now, kBound).empty());
        REQUIRE(draining(drains).empty());
        REQUIRE(kernel.refused() == 0);
    }
}

TEST_CASE("fake kernel: the kernel's refusals", "[diff]") {
    FakeKernel kernel(kWebState);
    auto errno_of = [&](const Op& op) {
        const Status s = kernel.apply(op);
        return s ? 0 : s.error().errno_value;
    };
    const VirtualServer web = kWebState.at(kWeb).server;
    VirtualServer other = web;
    other.key = key("10.96.0.99", 80);
    REQUIRE(errno_of(Op{OpKind::kAddService, web, {}}) == EEXIST);
    REQUIRE(errno_of(Op{OpKind::kEditService, other, {}}) == ESRCH);
    REQUIRE(errno_of(Op{OpKind::kDeleteService, other, {}}) == ESRCH);
    REQUIRE(errno_of(Op{OpKind::kAddDestination, other, rs("10.244.1.7", 8080)}) == ESRCH);
    REQUIRE(errno_of(Op{OpKind::kAddDestination, web, rs("10.244.1.7", 8080)}) == EEXIST);
    REQUIRE(errno_of(Op{OpKind::kEditDestination, web, rs("10.244.9.9", 8080)}) == ENOENT);
    REQUIRE(errno_of(Op{OpKind::kDeleteDestination, web, rs("10.244.9.9", 8080)}) == ENOENT);
    VirtualServer unknown_scheduler = other;
    unknown_scheduler.scheduler = "wlc";
    REQUIRE(errno_of(Op{OpKind::kAddService, unknown_scheduler, {}}) == ENOENT);
    REQUIRE(kernel.refused() == 8);
    REQUIRE(kernel.applied().empty());
    REQUIRE(to_ipvsadm_text(kernel.table()) == to_ipvsadm_text(kWebState));
    REQUIRE(kernel.requests_sent() == 8);
}

TEST_CASE("fake kernel: Ops change the table, a service's delete takes its real servers",
          "[diff]") {
    FakeKernel kernel(kWebState);
    REQUIRE(kernel.set_connections(kWeb, ip("10.244.1.7"), 8080, 4, 2));
    REQUIRE_FALSE(kernel.set_connections(kWeb, ip("10.244.9.9"), 8080, 1));
    REQUIRE(kernel.apply(
        Op{OpKind::kEditDestination, kWebState.at(kWeb).server, rs("10.244.1.7", 8080, 0)}));
    const RealServer edited = kernel.list_destinations(kWeb)->front();
    REQUIRE(edited.weight == 0);
    REQUIRE(edited.active_connections == 4);  // an edit keeps the connections
    REQUIRE(edited.inactive_connections == 2);
    REQUIRE(kernel.apply(
        Op{OpKind::kAddDestination, kWebState.at(kWeb).server, rs("10.244.0.1", 80, 1, 5)}));
    const std::vector<RealServer> listed = *kernel.list_destinations(kWeb);
    REQUIRE(listed.size() == 3);
    REQUIRE(listed.front().address == ip("10.244.0.1"));  // sorted
    REQUIRE(listed.front().active_connections == 0);      // a new one has none
    REQUIRE(kernel.apply(Op{OpKind::kDeleteService, kWebState.at(kWeb).server, {}}));
    REQUIRE(kernel.table().empty());
    REQUIRE(kernel.list_destinations(kWeb)->empty());
    REQUIRE(kernel.applied().size() == 3);
}

TEST_CASE("fake kernel: a chosen apply and the listings fail on demand", "[diff]") {
    FakeKernel kernel;
    Drains drains;
    const std::vector<Op> ops = diff(kWebState, {}, drains, kStart, kBound);
    REQUIRE(ops.size() == 3);
    kernel.fail_apply(2, ENOMEM);
    REQUIRE(kernel.apply(ops[0]));
    const Status refused = kernel.apply(ops[1]);
    REQUIRE_FALSE(refused);
    REQUIRE(refused.error().code == ErrorCode::kKernel);
    REQUIRE(refused.error().errno_value == ENOMEM);
    REQUIRE(kernel.apply(ops[1]));  // only the second one failed
    REQUIRE(kernel.applied().size() == 2);
    REQUIRE(kernel.requests_sent() == 3);

    kernel.fail_lists(EPERM);
    REQUIRE(kernel.list().error().errno_value == EPERM);
    REQUIRE(kernel.list_destinations(kWeb).error().errno_value == EPERM);
    kernel.fail_lists(0);
    REQUIRE(kernel.list()->size() == 1);
    // A listing is one dump of the services and one of each service's
    // destinations, failed or not: 3 applies, 2 + 1 failed dumps, 2 more.
    REQUIRE(kernel.requests_sent() == 3 + 3 + 2);
}

TEST_CASE("fake kernel: timeouts set the non-zero ones, and nothing when all are 0", "[diff]") {
    FakeKernel kernel;
    REQUIRE(kernel.set_timeouts(Timeouts{}));
    REQUIRE(kernel.requests_sent() == 0);
    REQUIRE(kernel.set_timeouts(Timeouts{900, 0, 300}));
    REQUIRE(kernel.set_timeouts(Timeouts{0, 120, 0}));
    REQUIRE(kernel.timeouts() == Timeouts{900, 120, 300});
    REQUIRE(kernel.requests_sent() == 2);
}
