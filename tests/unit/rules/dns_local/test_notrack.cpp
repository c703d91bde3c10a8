// The node-local DNS notrack table (rules/dns_local), traced together with
// the nftables backend's own table as the kernel runs both: DNS to and from
// the local addresses is untracked and so never DNATed, even where a Service
// still claims the address; every other packet is untouched. Also the
// --dns-local-address validation.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/dns_local/dns_local.h"
#include "rules/nftables/render.h"
#include "tests/unit/rules/nftables/tracer.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using namespace sb::rules::nftables::testing;
using namespace sb::rules::testing;

namespace {

const IpAddress kKubeDns = ip("10.96.0.10");
const IpAddress kNodeLocal = ip("169.254.20.10");
const IpAddress kKubeDns6 = ip("fd00:96::a");

// Both tables in one model (their chain names differ), with Services on
// the kube-dns address's UDP and TCP port 53 and TCP port 80: the worst
// case, where the planner's exclusion is missing.
Model both_tables(const std::vector<IpAddress>& local) {
    ServicePortPlan udp = web(three_endpoints());
    udp.cluster_ips = {kKubeDns};
    udp.protocol = Protocol::kUDP;
    udp.port = 53;
    udp.port_name = "dns";
    ServicePortPlan tcp = udp;
    tcp.protocol = Protocol::kTCP;
    tcp.port_name = "dns-tcp";
    RenderResult r = render(plan_on_node_a({udp, tcp, web(three_endpoints())}), options());
    REQUIRE(r.errors.empty());
    Model model = std::move(r.model);
    for (auto& [name, chain] : dns_local::render_notrack(local).chains) {
        REQUIRE(model.chains.emplace(name, chain).second);
    }
    return model;
}

std::vector<Outcome> trace(const Model& model, const Packet& p) {
    Tracer tracer(model, {kNode, kNode6, kKubeDns, kNodeLocal, kKubeDns6});
    return tracer.trace(p);
}

void require_untracked_local(const std::vector<Outcome>& outcomes) {
    REQUIRE(outcomes.size() == 1);
    INFO(outcomes[0].describe());
    CHECK(outcomes[0].untracked);
    CHECK(outcomes[0].fate == Fate::kAccept);
    CHECK_FALSE(outcomes[0].dnat);
    CHECK_FALSE(outcomes[0].masquerade);
}

Packet answer(IpAddress from, IpAddress to, uint8_t proto) {
    Packet p = packet(from, to, 40000, proto, true);
    p.sport = dns_local::kDnsPort;
    return p;
}

}  // namespace

TEST_CASE("queries from a pod to a node-local address, UDP and TCP, are untracked, not DNATed") {
    const Model m = both_tables({kKubeDns, kNodeLocal, kKubeDns6});
    for (const uint8_t proto : {uint8_t{IPPROTO_UDP}, uint8_t{IPPROTO_TCP}}) {
        require_untracked_local(trace(m, packet(kPod, kKubeDns, 53, proto)));
        require_untracked_local(trace(m, packet(kPod, kNodeLocal, 53, proto)));
        require_untracked_local(trace(m, packet(kPod6, kKubeDns6, 53, proto)));
        // From the node itself (output hook, then over lo).
        require_untracked_local(trace(m, packet(kNode, kKubeDns, 53, proto, true)));
    }
}

TEST_CASE("answers from a node-local address are untracked in the output hook") {
    const Model m = both_tables({kKubeDns, kNodeLocal, kKubeDns6});
    for (const uint8_t proto : {uint8_t{IPPROTO_UDP}, uint8_t{IPPROTO_TCP}}) {
        const std::vector<Outcome> out = trace(m, answer(kNodeLocal, kPod, proto));
        REQUIRE(out.size() == 1);
        CHECK(out[0].untracked);
        CHECK(trace(m, answer(kKubeDns6, kPod6, proto))[0].untracked);
    }
}

TEST_CASE("other ports and other addresses keep conntrack and their DNAT") {
    const Model m = both_tables({kKubeDns, kNodeLocal});
    // Port 80 of the same address is a Service like any other.
    const std::vector<Outcome> web_out = trace(m, packet(kPod, kKubeDns, 80));
    require_uniform(web_out, kAllTargets, false);
    for (const Outcome& o : web_out) CHECK_FALSE(o.untracked);
    // Without kKubeDns among the local addresses its DNS is DNATed as before.
    const std::vector<Outcome> dnat =
        trace(both_tables({kNodeLocal}), packet(kPod, kKubeDns, 53, IPPROTO_UDP));
    require_uniform(dnat, kAllTargets, false);
    for (const Outcome& o : dnat) CHECK_FALSE(o.untracked);
    // A packet from port 53 of a pod to the address is a query's answer only
    // when it comes from the address.
    Packet from_pod = packet(kPod, kNodeLocal, 40000, IPPROTO_UDP);
    from_pod.sport = 53;
    CHECK_FALSE(trace(m, from_pod)[0].untracked);
}

TEST_CASE("the notrack table hooks prerouting and output at raw priority, and nothing when empty") {
    const Model m = dns_local::render_notrack({kNodeLocal});
    REQUIRE(m.chains.size() == 2);
    for (const auto& [name, chain] : m.chains) {
        REQUIRE(chain.hook);
        CHECK(chain.hook->priority == -300);
        CHECK(chain.rules.size() == 4);  // UDP and TCP, query and answer
    }
    CHECK(m.chains.at(dns_local::kNotrackPrerouting).hook->hook == "prerouting");
    CHECK(m.chains.at(dns_local::kNotrackOutput).hook->hook == "output");
    CHECK(to_nft_text(m.chains.at(dns_local::kNotrackOutput).rules[0]) ==
          "meta nfproto ipv4 ip daddr 169.254.20.10 meta l4proto udp th dport 53 notrack");
    CHECK(dns_local::render_notrack({}).chains.empty());
}

TEST_CASE("--dns-local-address values are validated") {
    CHECK(dns_local::validate_addresses({kKubeDns, kNodeLocal, kKubeDns6}));
    CHECK(dns_local::validate_addresses({}));
    for (const char* bad :
         {"0.0.0.0", "127.0.0.53", "224.0.0.251", "::", "::1", "ff02::fb", "fe80::1"}) {
        INFO(bad);
        const Status s = dns_local::validate_addresses({ip(bad)});
        REQUIRE_FALSE(s);
        CHECK(s.error().message.find(bad) != std::string::npos);
    }
    CHECK_FALSE(dns_local::validate_addresses({kKubeDns, kKubeDns}));
    std::vector<IpAddress> nine;
    for (int i = 1; i <= 9; ++i) nine.push_back(ip(fmt::format("10.96.0.{}", i).c_str()));
    CHECK_FALSE(dns_local::validate_addresses(nine));
    nine.pop_back();
    CHECK(dns_local::validate_addresses(nine));
}
