// The IPVS mode's helper table (rules/ipvs/helper_rules.h): the refusals
// traced through the nftables tracer (the filter hooks run before IPVS, so
// a packet's fate there is what a client meets), the masquerade marks and
// hairpin pairs as the elements the nat chains look up, and a shape that
// does not grow with the number of Services.
#include <netinet/in.h>

#include <optional>

#include <catch2/catch.hpp>

#include "rules/ipvs/helper_rules.h"
#include "rules/nftables/render.h"
#include "tests/unit/rules/nftables/tracer.h"
#include "tests/unit/rules_fixtures.h"

namespace sb::rules::ipvs {
namespace {

using namespace sb::rules::testing;
using nftables::ElementKey;
using nftables::Model;
using nftables::VerdictKind;
using nftables::testing::Tracer;

const IpAddress kClusterIp = ip("10.96.0.10");

// The addresses the IPVS render would put on sb-ipvs0 for these ports.
std::vector<IpAddress> service_addresses(const std::vector<ServicePortPlan>& ports) {
    std::vector<IpAddress> out;
    for (const auto& port : ports) {
        for (const auto* list : {&port.cluster_ips, &port.external_ips, &port.load_balancer_ips}) {
            out.insert(out.end(), list->begin(), list->end());
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

Model helper_for(std::vector<ServicePortPlan> ports, const BackendOptions& o = options()) {
    const std::vector<IpAddress> addresses = service_addresses(ports);
    return render_helper_rules(plan_on_node_a(std::move(ports)), o, addresses);
}

// The fate of a new connection's first packet: the service addresses are
// local (on sb-ipvs0), as is the node's address.
Fate fate(const Model& model, const Packet& p) {
    std::vector<IpAddress> local = {kNode};
    for (const auto& [name, set] : model.sets) {
        if (name.rfind("service-ips", 0) != 0) continue;
        for (const auto& [key, value] : set.elements) local.push_back(key.a);
    }
    Tracer tracer(model, local);
    return single_fate(tracer.trace(p));
}

// The value of `key` in `set` (ElementMap's iterators yield by value).
std::optional<nftables::Verdict> element(const Model& model, const std::string& set,
                                         const ElementKey& key) {
    const auto& elements = model.sets.at(set).elements;
    auto it = elements.find(key);
    if (it == elements.end()) return std::nullopt;
    return (*it).second;
}

ServicePortPlan node_port_web(std::vector<Endpoint> endpoints, TrafficPolicy external) {
    ServicePortPlan p = web(std::move(endpoints));
    p.node_port = 30080;
    p.external_traffic_policy = external;
    return p;
}

TEST_CASE("ipvs helper: a service port with endpoints is let through to IPVS", "[helper]") {
    const Model model = helper_for({web(three_endpoints())});
    CHECK(model.table == kHelperTable);
    CHECK(fate(model, packet(kPod, kClusterIp, 80)) == Fate::kAccept);
    CHECK(fate(model, packet(kNode, kClusterIp, 80, IPPROTO_TCP, true)) == Fate::kAccept);
}

TEST_CASE("ipvs helper: a port of a service address that nothing proxies is rejected", "[helper]") {
    // The address is local on sb-ipvs0: without the reject a node listener
    // on 0.0.0.0:81 would answer on the ClusterIP.
    const Model model = helper_for({web(three_endpoints())});
    CHECK(fate(model, packet(kPod, kClusterIp, 81)) == Fate::kReject);
    CHECK(fate(model, packet(kPod, kClusterIp, 80, IPPROTO_UDP)) == Fate::kReject);
    CHECK(fate(model, packet(kNode, kClusterIp, 81, IPPROTO_TCP, true)) == Fate::kReject);
    // The node's own address is not a service address: left alone.
    CHECK(fate(model, packet(kPod, kNode, 22)) == Fate::kAccept);
}

TEST_CASE("ipvs helper: a service port without endpoints rejects", "[helper]") {
    const Model model = helper_for({node_port_web({}, TrafficPolicy::kCluster)});
    CHECK(fate(model, packet(kPod, kClusterIp, 80)) == Fate::kReject);
    CHECK(fate(model, packet(kOutside, kNode, 30080)) == Fate::kReject);
    CHECK(fate(model, packet(kNode, kClusterIp, 80, IPPROTO_TCP, true)) == Fate::kReject);
}

TEST_CASE(
    "ipvs helper: externalTrafficPolicy Local without local endpoints drops external "
    "traffic only",
    "[helper]") {
    const Model model =
        helper_for({node_port_web({endpoint("10.244.2.7", 8080, false)}, TrafficPolicy::kLocal)});
    CHECK(fate(model, packet(kOutside, kNode, 30080)) == Fate::kDrop);
    CHECK(fate(model, packet(kPod, kClusterIp, 80)) == Fate::kAccept);
}

TEST_CASE("ipvs helper: loadBalancerSourceRanges admit only their sources", "[helper]") {
    ServicePortPlan p = web(three_endpoints());
    p.load_balancer_ips = {ip("198.51.100.7")};
    p.load_balancer_source_ranges = {prefix("203.0.113.0/24")};
    const Model model = helper_for({p});
    CHECK(fate(model, packet(kOutside, ip("198.51.100.7"), 80)) == Fate::kAccept);
    CHECK(fate(model, packet(ip("192.0.2.1"), ip("198.51.100.7"), 80)) == Fate::kDrop);
}

TEST_CASE("ipvs helper: masquerade marks follow the service policy", "[helper]") {
    const uint8_t tcp = IPPROTO_TCP;
    SECTION("ClusterIP traffic from outside the cluster CIDR") {
        const Model model = helper_for({web(three_endpoints())});
        const auto mark = element(model, nftables::services_map(IpFamily::kV4),
                                  ElementKey{kClusterIp, {}, tcp, 80});
        REQUIRE(mark);
        CHECK(mark->kind == VerdictKind::kGoto);
        CHECK(mark->chain == nftables::masq_outside_chain(IpFamily::kV4));
        REQUIRE(model.chains.count(mark->chain));
    }
    SECTION("--masquerade-all marks all ClusterIP traffic") {
        BackendOptions o = options();
        o.masquerade_all = true;
        const Model model = helper_for({web(three_endpoints())}, o);
        const auto mark = element(model, nftables::services_map(IpFamily::kV4),
                                  ElementKey{kClusterIp, {}, tcp, 80});
        REQUIRE(mark);
        CHECK(mark->chain == nftables::kMarkForMasqueradeChain);
    }
    SECTION("no cluster CIDR and no --masquerade-all: no ClusterIP mark") {
        const Model model = helper_for({web(three_endpoints())}, BackendOptions{});
        CHECK_FALSE(element(model, nftables::services_map(IpFamily::kV4),
                            ElementKey{kClusterIp, {}, tcp, 80}));
    }
    SECTION("NodePort under the Cluster policy is masqueraded, under Local it is not") {
        const Model cluster =
            helper_for({node_port_web(three_endpoints(), TrafficPolicy::kCluster)});
        const auto mark = element(cluster, nftables::nodeports_map(IpFamily::kV4),
                                  ElementKey{{}, {}, tcp, 30080});
        REQUIRE(mark);
        CHECK(mark->chain == nftables::kMarkForMasqueradeChain);
        const Model local = helper_for({node_port_web(three_endpoints(), TrafficPolicy::kLocal)});
        CHECK_FALSE(
            element(local, nftables::nodeports_map(IpFamily::kV4), ElementKey{{}, {}, tcp, 30080}));
    }
}

TEST_CASE("ipvs helper: every endpoint's hairpin pair is masqueraded", "[helper]") {
    const Model model = helper_for({web(three_endpoints())});
    const auto& hairpin = model.sets.at(nftables::hairpin_set(IpFamily::kV4)).elements;
    CHECK(hairpin.size() == 3);
    for (const char* address : {"10.244.1.7", "10.244.2.7", "10.244.3.7"}) {
        CHECK(hairpin.find(ElementKey{ip(address), ip(address), 0, 0}) != hairpin.end());
    }
}

TEST_CASE("ipvs helper: the chains do not grow with the number of Services", "[helper]") {
    std::vector<ServicePortPlan> one = {web(three_endpoints())};
    std::vector<ServicePortPlan> many;
    for (int i = 0; i < 200; ++i) {
        ServicePortPlan p = node_port_web(i % 2 ? three_endpoints() : std::vector<Endpoint>{},
                                          TrafficPolicy::kCluster);
        p.service = "web" + std::to_string(i);
        p.cluster_ips = {IpAddress::v4(0x0a600000u + 100 + static_cast<uint32_t>(i))};
        p.node_port = static_cast<uint16_t>(30000 + i);
        many.push_back(p);
    }
    const Model small = helper_for(one);
    const Model large = helper_for(many);
    CHECK(large.chains.size() == small.chains.size());
    CHECK(large.sets.size() == small.sets.size());
    CHECK(large.sets.at("service-ips4").elements.size() == 200);
}

}  // namespace
}  // namespace sb::rules::ipvs
