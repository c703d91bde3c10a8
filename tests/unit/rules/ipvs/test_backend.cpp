// The IPVS backend's sync logic over fakes of every kernel edge: the IPVS
// table (fake_kernel.h), the helper nftables table (the nftables backend's
// fake channel), the link and sysctls (FakeHost below) and conntrack. What
// is asserted is the kernel state and the requests it took, as a real
// kernel would hold them after each sync.
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rules/ipvs/helper_rules.h"
#include "rules/ipvs/ipvs_backend.h"
#include "tests/unit/fake_conntrack.h"
#include "tests/unit/rules/ipvs/fake_kernel.h"
#include "tests/unit/rules/nftables/fake_channel.h"
#include "tests/unit/rules_fixtures.h"

namespace sb::rules::ipvs {
namespace {

using namespace sb::rules::testing;
using Clock = std::chrono::steady_clock;

// The node's interfaces and sysctls as data. Shared with the backend
// through a pointer, so the test reads what the backend did.
struct HostState {
    std::vector<IpAddress> node = {ip("192.168.1.10"), ip("127.0.0.1"), ip("fe80::1")};
    bool link_exists = false;
    std::vector<IpAddress> link;
    // Every address set the link was given, in order.
    std::vector<std::vector<IpAddress>> link_updates;
    std::map<std::string, std::string> sysctls;
};

class FakeHost final : public HostNetwork {
  public:
    explicit FakeHost(HostState& state) : state_(state) {}
    Result<std::vector<IpAddress>> node_addresses() override { return state_.node; }
    Result<std::vector<IpAddress>> link_addresses() override { return state_.link; }
    Status ensure_link(const std::vector<IpAddress>& addresses) override {
        state_.link_exists = true;
        state_.link = addresses;
        state_.link_updates.push_back(addresses);
        return {};
    }
    Status remove_link() override {
        state_.link_exists = false;
        state_.link.clear();
        return {};
    }
    Status set_sysctl(const std::string& path, const std::string& value) override {
        state_.sysctls[path] = value;
        return {};
    }

  private:
    HostState& state_;
};

const IpAddress kClusterIp = ip("10.96.0.10");
const uint8_t kTcp = IPPROTO_TCP;

// Everything one node holds; backends made from it share it, as successive
// switchboard processes share a kernel.
struct Node {
    testing::FakeKernel ipvs;
    nftables::testing::FakeKernel nft;
    HostState host;
    FakeConntrack conntrack;
    Clock::time_point now = Clock::time_point() + std::chrono::hours(1);

    std::unique_ptr<Backend> backend(BackendOptions o = options()) {
        BackendEdges edges{[this]() -> Result<std::unique_ptr<IpvsKernel>> {
                               return std::unique_ptr<IpvsKernel>(std::make_unique<Proxy>(ipvs));
                           },
                           nft.opener(kHelperTable), std::make_unique<FakeHost>(host),
                           conntrack.table(), [this] { return now; }};
        return make_backend(o, std::move(edges));
    }

    const Service* server(const IpAddress& address, uint16_t port, uint8_t proto = kTcp) const {
        auto it = ipvs.table().find(ServiceKey{address, proto, port});
        return it == ipvs.table().end() ? nullptr : &it->second;
    }

    // A backend owns its kernel handle; this one forwards to the node's.
    class Proxy final : public IpvsKernel {
      public:
        explicit Proxy(IpvsKernel& kernel) : kernel_(kernel) {}
        Result<IpvsState> list() override { return kernel_.list(); }
        Result<std::vector<RealServer>> list_destinations(const ServiceKey& key) override {
            return kernel_.list_destinations(key);
        }
        Status apply(const Op& op) override { return kernel_.apply(op); }
        Status set_timeouts(const Timeouts& t) override { return kernel_.set_timeouts(t); }
        size_t requests_sent() const override { return kernel_.requests_sent(); }

      private:
        IpvsKernel& kernel_;
    };
};

std::vector<std::pair<std::string, uint32_t>> destinations(const Service& service) {
    std::vector<std::pair<std::string, uint32_t>> out;
    for (const RealServer& r : service.destinations) {
        out.emplace_back(r.address.to_string() + ":" + std::to_string(r.port), r.weight);
    }
    return out;
}

ServicePortPlan node_port_web(std::vector<Endpoint> endpoints) {
    ServicePortPlan p = web(std::move(endpoints));
    p.node_port = 30080;
    return p;
}

TEST_CASE("ipvs backend: a first sync makes the virtual servers, the link and the helper table",
          "[backend]") {
    Node node;
    BackendOptions o = options();
    o.ipvs_tcp_timeout_seconds = 900;
    auto backend = node.backend(o);
    const Plan plan = plan_on_node_a({node_port_web(three_endpoints())});
    auto stats = backend->sync(plan, nullptr);
    REQUIRE(stats.ok());
    CHECK(stats->full);

    const Service* cluster = node.server(kClusterIp, 80);
    REQUIRE(cluster);
    CHECK(cluster->server.scheduler == "rr");
    CHECK(destinations(*cluster) ==
          std::vector<std::pair<std::string, uint32_t>>{
              {"10.244.1.7:8080", 1}, {"10.244.2.7:8080", 1}, {"10.244.3.7:8080", 1}});
    // The NodePort on the node's address, not on loopback or link-local.
    REQUIRE(node.server(ip("192.168.1.10"), 30080));
    CHECK(node.ipvs.table().size() == 2);

    CHECK(node.host.link == std::vector<IpAddress>{kClusterIp});
    REQUIRE(node.nft.table(kHelperTable));
    CHECK(node.nft.table(kHelperTable)->sets.at("service-ips4").elements.size() == 1);
    CHECK(node.host.sysctls.at("net/ipv4/vs/conntrack") == "1");
    CHECK(node.host.sysctls.at("net/ipv4/vs/expire_nodest_conn") == "1");
    CHECK_FALSE(node.host.sysctls.count("net/ipv4/conf/all/arp_ignore"));
    CHECK(node.ipvs.timeouts().tcp_seconds == 900);
}

TEST_CASE("ipvs backend: one endpoint change costs one request", "[backend]") {
    Node node;
    auto backend = node.backend();
    const Plan before = plan_on_node_a({web(three_endpoints())});
    REQUIRE(backend->sync(before, nullptr).ok());

    std::vector<Endpoint> four = three_endpoints();
    four.push_back(endpoint("10.244.4.7", 8080, false));
    const Plan added = plan_on_node_a({web(four)});
    const size_t requests = node.ipvs.requests_sent();
    node.ipvs.clear_applied();
    REQUIRE(backend->sync(added, &before).ok());
    CHECK(node.ipvs.requests_sent() - requests == 1);
    REQUIRE(node.ipvs.applied().size() == 1);
    CHECK(node.ipvs.applied()[0].kind == OpKind::kAddDestination);
    CHECK(node.server(kClusterIp, 80)->destinations.size() == 4);
}

TEST_CASE("ipvs backend: a removed TCP endpoint drains at weight 0, then goes", "[backend]") {
    Node node;
    auto backend = node.backend();
    const Plan before = plan_on_node_a({web(three_endpoints())});
    REQUIRE(backend->sync(before, nullptr).ok());
    node.ipvs.set_connections(ServiceKey{kClusterIp, kTcp, 80}, ip("10.244.3.7"), 8080, 2);

    std::vector<Endpoint> two = three_endpoints();
    two.pop_back();
    const Plan after = plan_on_node_a({web(two)});
    auto drained = backend->sync(after, &before);
    REQUIRE(drained.ok());
    CHECK(drained->draining_real_servers == 1);
    CHECK(destinations(*node.server(kClusterIp, 80)) ==
          std::vector<std::pair<std::string, uint32_t>>{
              {"10.244.1.7:8080", 1}, {"10.244.2.7:8080", 1}, {"10.244.3.7:8080", 0}});

    SECTION("deleted once its connections have ended") {
        node.ipvs.set_connections(ServiceKey{kClusterIp, kTcp, 80}, ip("10.244.3.7"), 8080, 0);
        auto done = backend->sync(after, &after);
        REQUIRE(done.ok());
        CHECK(done->draining_real_servers == 0);
        CHECK(node.server(kClusterIp, 80)->destinations.size() == 2);
    }
    SECTION("kept while they last, deleted after the bound") {
        node.now += std::chrono::seconds(10);
        REQUIRE(backend->sync(after, &after).ok());
        CHECK(node.server(kClusterIp, 80)->destinations.size() == 3);
        node.now += kDrainBound;
        auto done = backend->sync(after, &after);
        REQUIRE(done.ok());
        CHECK(done->draining_real_servers == 0);
        CHECK(node.server(kClusterIp, 80)->destinations.size() == 2);
    }
}

TEST_CASE("ipvs backend: a restarted backend adopts its virtual servers without a change",
          "[backend]") {
    Node node;
    const Plan plan = plan_on_node_a({node_port_web(three_endpoints())});
    REQUIRE(node.backend()->sync(plan, nullptr).ok());
    node.ipvs.clear_applied();
    const size_t link_updates = node.host.link_updates.size();

    auto restarted = node.backend();
    REQUIRE(restarted->sync(plan, nullptr).ok());
    CHECK(node.ipvs.applied().empty());
    CHECK(node.host.link_updates.size() == link_updates);
    CHECK(node.host.link == std::vector<IpAddress>{kClusterIp});
}

TEST_CASE("ipvs backend: only switchboard's virtual servers are touched", "[backend]") {
    Node node;
    // A user's virtual server on another address, and one on a service
    // address inside --ipvs-exclude-cidrs.
    VirtualServer user;
    user.key = ServiceKey{ip("172.16.0.1"), kTcp, 80};
    node.ipvs.table()[user.key] = Service{user, {}};
    VirtualServer excluded;
    excluded.key = ServiceKey{ip("10.96.5.5"), kTcp, 443};
    node.ipvs.table()[excluded.key] = Service{excluded, {}};
    node.host.link = {ip("10.96.5.5")};  // left by an earlier run

    BackendOptions o = options();
    o.ipvs_exclude_cidrs = {prefix("10.96.5.0/24")};
    auto backend = node.backend(o);
    REQUIRE(backend->sync(plan_on_node_a({web(three_endpoints())}), nullptr).ok());
    CHECK(node.ipvs.table().count(user.key));
    CHECK(node.ipvs.table().count(excluded.key));
    REQUIRE(node.server(kClusterIp, 80));

    REQUIRE(backend->cleanup().ok());
    CHECK(node.ipvs.table().size() == 2);
    CHECK(node.ipvs.table().count(user.key));
    CHECK(node.ipvs.table().count(excluded.key));
    CHECK_FALSE(node.host.link_exists);
    CHECK_FALSE(node.nft.table(kHelperTable));
}

TEST_CASE("ipvs backend: a removed Service loses its server before its address", "[backend]") {
    Node node;
    auto backend = node.backend();
    ServicePortPlan other = web(three_endpoints());
    other.service = "other";
    other.cluster_ips = {ip("10.96.0.20")};
    const Plan both = plan_on_node_a({other, web(three_endpoints())});
    REQUIRE(backend->sync(both, nullptr).ok());
    CHECK(node.host.link == std::vector<IpAddress>{kClusterIp, ip("10.96.0.20")});

    const Plan one = plan_on_node_a({web(three_endpoints())});
    REQUIRE(backend->sync(one, &both).ok());
    CHECK_FALSE(node.server(ip("10.96.0.20"), 80));
    CHECK(node.host.link == std::vector<IpAddress>{kClusterIp});
    // A new address arrives before the servers and helper rules that use it:
    // the first update of a sync is the union.
    ServicePortPlan third = web(three_endpoints());
    third.service = "third";
    third.cluster_ips = {ip("10.96.0.30")};
    const Plan swapped = plan_on_node_a({third});
    const size_t updates = node.host.link_updates.size();
    REQUIRE(backend->sync(swapped, &one).ok());
    REQUIRE(node.host.link_updates.size() == updates + 2);
    CHECK(node.host.link_updates[updates] == std::vector<IpAddress>{kClusterIp, ip("10.96.0.30")});
    CHECK(node.host.link == std::vector<IpAddress>{ip("10.96.0.30")});
}

TEST_CASE("ipvs backend: a refused request fails the sync; the next one repairs", "[backend]") {
    Node node;
    auto backend = node.backend();
    const Plan plan = plan_on_node_a({web(three_endpoints())});
    node.ipvs.fail_apply(2, ENOMEM);
    auto failed = backend->sync(plan, nullptr);
    REQUIRE_FALSE(failed.ok());
    CHECK(failed.error().errno_value == ENOMEM);
    CHECK(failed.error().message.find("10.96.0.10:80") != std::string::npos);
    // Behind the backend's back, too: a real server vanished.
    auto repaired = backend->sync(plan, nullptr);
    REQUIRE(repaired.ok());
    CHECK(node.server(kClusterIp, 80)->destinations.size() == 3);
    node.ipvs.table()[ServiceKey{kClusterIp, kTcp, 80}].destinations.pop_back();
    REQUIRE(backend->sync(plan, nullptr).ok());
    CHECK(node.server(kClusterIp, 80)->destinations.size() == 3);
}

TEST_CASE("ipvs backend: a UDP endpoint goes at once", "[backend]") {
    Node node;
    auto backend = node.backend();
    ServicePortPlan dns = web(three_endpoints());
    dns.protocol = Protocol::kUDP;
    const Plan before = plan_on_node_a({dns});
    REQUIRE(backend->sync(before, nullptr).ok());
    dns.cluster_endpoints.pop_back();
    const Plan after = plan_on_node_a({dns});
    auto stats = backend->sync(after, &before);
    REQUIRE(stats.ok());
    CHECK(stats->draining_real_servers == 0);
    CHECK(node.server(kClusterIp, 80, IPPROTO_UDP)->destinations.size() == 2);
}

TEST_CASE("ipvs backend: the dry run prints ipvsadm -Sn lines and the helper table", "[backend]") {
    Node node;
    ServicePortPlan p = web(three_endpoints());
    p.session_affinity = SessionAffinity{true, 600};
    p.ipvs_scheduler = "sh";
    auto text = node.backend()->render_text(plan_on_node_a({p}));
    REQUIRE(text.ok());
    CHECK(text->find("-A -t 10.96.0.10:80 -s sh -p 600\n") != std::string::npos);
    CHECK(text->find("-a -t 10.96.0.10:80 -r 10.244.1.7:8080 -m -w 1\n") != std::string::npos);
    CHECK(text->find("\n\ntable inet switchboard-ipvs {") != std::string::npos);
    CHECK(node.ipvs.table().empty());
    CHECK(node.host.link_updates.empty());
}

}  // namespace
}  // namespace sb::rules::ipvs

namespace sb::rules::ipvs {
namespace {

using namespace sb::rules::testing;

// A small deterministic generator, so a failure names a reproducible step.
struct Lcg {
    uint64_t state;
    uint32_t next(uint32_t bound) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<uint32_t>(state >> 33) % bound;
    }
};

ServicePortPlan random_port(int index, Lcg& rng) {
    ServicePortPlan p;
    p.ns = "default";
    p.service = "svc" + std::to_string(10 + index);  // two digits: plan order is index order
    p.port_name = "p";
    p.protocol = rng.next(4) == 0 ? Protocol::kUDP : Protocol::kTCP;
    p.cluster_ips = {IpAddress::v4(0x0a600000u + 10 + static_cast<uint32_t>(index))};
    p.port = 80;
    if (rng.next(3) == 0) p.node_port = static_cast<uint16_t>(30000 + index);
    // Now and then an external IP another Service may have too.
    if (rng.next(5) == 0) p.external_ips = {IpAddress::v4(0xc6336400u + rng.next(3))};
    const uint32_t endpoints = rng.next(5);
    std::vector<Endpoint> cluster;
    std::vector<Endpoint> local;
    for (uint32_t e = 0; e < endpoints; ++e) {
        const std::string address =
            "10.244." + std::to_string(1 + rng.next(3)) + "." + std::to_string(1 + rng.next(40));
        Endpoint ep = endpoint(address.c_str(), 8080, address.rfind("10.244.1.", 0) == 0);
        if (std::none_of(cluster.begin(), cluster.end(),
                         [&](const Endpoint& x) { return x.ip == ep.ip; })) {
            cluster.push_back(ep);
            if (ep.is_local) local.push_back(ep);
        }
    }
    std::sort(cluster.begin(), cluster.end());
    std::sort(local.begin(), local.end());
    p.cluster_endpoints = std::move(cluster);
    p.local_endpoints = std::move(local);
    return p;
}

Plan plan_of(const std::map<int, ServicePortPlan>& ports) {
    std::vector<ServicePortPlan> list;
    for (const auto& [_, p] : ports) list.push_back(p);
    Plan plan = plan_on_node_a(std::move(list));
    plan.revision = next_plan_revision();
    return plan;
}

std::string ipvs_text(const testing::FakeKernel& kernel) {
    std::string out;
    for (const auto& [key, service] : kernel.table()) {
        out += describe(Op{OpKind::kAddService, service.server, {}}) + " " +
               service.server.scheduler + "\n";
        for (const RealServer& r : service.destinations) {
            out += "  " + r.address.to_string() + ":" + std::to_string(r.port) + " w" +
                   std::to_string(r.weight) + "\n";
        }
    }
    return out;
}

TEST_CASE("ipvs backend: partial syncs leave the kernel as full syncs of the same plans do",
          "[backend]") {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
        Lcg rng{seed};
        std::map<int, ServicePortPlan> ports;
        for (int i = 0; i < 12; ++i) ports[i] = random_port(i, rng);
        Node partial;
        Node full;
        auto partial_backend = partial.backend();
        auto full_backend = full.backend();
        Plan previous = plan_of(ports);
        REQUIRE(partial_backend->sync(previous, nullptr).ok());
        REQUIRE(full_backend->sync(previous, nullptr).ok());
        int partial_syncs = 0;  // not every step falls back to a full render
        for (int step = 0; step < 25; ++step) {
            INFO("seed " << seed << " step " << step);
            for (uint32_t n = 1 + rng.next(3); n > 0; --n) {
                const int index = static_cast<int>(rng.next(14));
                if (rng.next(6) == 0) {
                    ports.erase(index);
                } else {
                    ports[index] = random_port(index, rng);
                }
            }
            const Plan plan = plan_of(ports);
            auto stats = partial_backend->sync(plan, &previous);
            REQUIRE(stats.ok());
            partial_syncs += stats->full ? 0 : 1;
            REQUIRE(full_backend->sync(plan, nullptr).ok());
            REQUIRE(ipvs_text(partial.ipvs) == ipvs_text(full.ipvs));
            REQUIRE(partial.host.link == full.host.link);
            REQUIRE(nftables::testing::kernel_text(*partial.nft.table(kHelperTable)) ==
                    nftables::testing::kernel_text(*full.nft.table(kHelperTable)));
            previous = plan;
        }
        CHECK(partial_syncs >= 10);
    }
}

}  // namespace
}  // namespace sb::rules::ipvs
