// Structure of the rendered iptables model and its iptables-restore text:
// names the kernel accepts, references that resolve, the text users see in
// --dry-run, and bad service ports skipped with an error.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/iptables/render.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::iptables;
using sb::rules::testing::endpoint;
using sb::rules::testing::ip;

namespace {

ServicePortPlan web() {
    ServicePortPlan p;
    p.ns = "default";
    p.service = "web";
    p.port_name = "http";
    p.cluster_ips = {ip("10.96.0.10"), ip("fd00:96::10")};
    p.port = 80;
    p.node_port = 30080;
    p.external_ips = {ip("198.51.100.7")};
    p.load_balancer_ips = {ip("198.51.100.20")};
    p.load_balancer_source_ranges = {*Prefix::parse("203.0.113.0/24")};
    p.session_affinity.client_ip = true;
    p.cluster_endpoints = {endpoint("10.244.1.7", 8080, true), endpoint("10.244.2.7", 8080, false),
                           endpoint("fd00:244:1::7", 8080, true)};
    p.local_endpoints = {p.cluster_endpoints[0], p.cluster_endpoints[2]};
    p.external_traffic_policy = TrafficPolicy::kLocal;
    return p;
}

Plan plan_of(std::vector<ServicePortPlan> ports) {
    Plan plan;
    plan.node = "node-a";
    plan.services = std::move(ports);
    return plan;
}

BackendOptions options() {
    BackendOptions o;
    o.cluster_cidrs = {*Prefix::parse("10.244.0.0/16")};
    return o;
}

bool contains_line(const std::string& text, const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
}

}  // namespace

TEST_CASE("iptables render: own chains only, valid names, every jump resolves") {
    ServicePortPlan empty = web();
    empty.service = "empty";
    empty.cluster_endpoints.clear();
    empty.local_endpoints.clear();
    const RenderResult r = render(plan_of({web(), empty}), options());
    REQUIRE(r.errors.empty());
    for (const FamilyModel* m : {&r.model.v4, &r.model.v6}) {
        for (const Table* t : {&m->nat, &m->filter}) {
            REQUIRE_FALSE(t->chains.empty());
            for (const auto& [name, chain] : t->chains) {
                INFO(name);
                REQUIRE(name == chain.name);
                REQUIRE(name.rfind(kChainPrefix, 0) == 0);
                REQUIRE(name.size() <= kMaxChainName);
                for (const Rule& rule : chain.rules) {
                    if (rule.target.kind == TargetKind::kJump) {
                        REQUIRE(t->chains.count(rule.target.chain) == 1);
                    }
                    if (rule.dport != 0) REQUIRE(rule.proto != 0);
                    if (rule.target.kind == TargetKind::kDnat) {
                        REQUIRE(rule.proto != 0);
                        REQUIRE(t->name == "nat");
                        REQUIRE(rule.target.address.family() == m->family);
                    }
                    if (rule.target.kind == TargetKind::kRejectTcpReset ||
                        rule.target.kind == TargetKind::kRejectPortUnreachable) {
                        REQUIRE(t->name == "filter");
                    }
                    if (rule.source) REQUIRE(rule.source->family() == m->family);
                    if (rule.destination) REQUIRE(rule.destination->family() == m->family);
                }
            }
            for (const HookRule& hook : t->hooks) {
                REQUIRE(hook.rule.target.kind == TargetKind::kJump);
                REQUIRE(t->chains.count(hook.rule.target.chain) == 1);
            }
        }
    }
}

TEST_CASE("iptables render: iptables-restore text of a service") {
    ServicePortPlan p = web();
    p.session_affinity = {};
    p.external_traffic_policy = TrafficPolicy::kCluster;
    p.load_balancer_source_ranges.clear();
    const RenderResult r = render(plan_of({p}), options());
    const std::string v4 = to_restore_text(r.model.v4);
    const std::string svc = service_chain_name("SVC", p);
    const std::string sep1 = endpoint_chain_name(p, p.cluster_endpoints[0]);
    const std::string sep2 = endpoint_chain_name(p, p.cluster_endpoints[1]);
    INFO(v4);
    REQUIRE(v4.rfind("*nat\n", 0) == 0);
    REQUIRE(contains_line(v4, ":" + svc + " - [0:0]"));
    REQUIRE(contains_line(v4, "-I PREROUTING 1 -j SWITCHBOARD-SERVICES"));
    REQUIRE(contains_line(v4, "-I OUTPUT 1 -j SWITCHBOARD-SERVICES"));
    REQUIRE(contains_line(v4, "-I POSTROUTING 1 -j SWITCHBOARD-POSTROUTING"));
    REQUIRE(contains_line(v4,
                          "-A SWITCHBOARD-SERVICES -d 10.96.0.10/32 -p tcp -m comment "
                          "--comment \"default/web:http/TCP cluster IP\" -m tcp --dport 80 -j " +
                              svc));
    REQUIRE(contains_line(v4, "-A " + svc +
                                  " -d 10.96.0.10/32 -p tcp -m tcp --dport 80 -j "
                                  "SWITCHBOARD-MASQ-OUTSIDE"));
    REQUIRE(contains_line(v4, "-A " + svc +
                                  " -m comment --comment \"default/web:http/TCP -> 10.244.1.7\" -m "
                                  "statistic --mode random --probability 0.50000000000 -j " +
                                  sep1));
    REQUIRE(contains_line(
        v4,
        "-A " + svc + " -m comment --comment \"default/web:http/TCP -> 10.244.2.7\" -j " + sep2));
    REQUIRE(contains_line(v4, "-A " + sep1 + " -s 10.244.1.7/32 -j SWITCHBOARD-MARK-MASQ"));
    REQUIRE(contains_line(v4, "-A " + sep1 + " -p tcp -j DNAT --to-destination 10.244.1.7:8080"));
    // localhostNodePorts (on by default): loopback is a NodePort address too.
    REQUIRE(contains_line(v4,
                          "-A SWITCHBOARD-SERVICES -m addrtype --dst-type LOCAL -j "
                          "SWITCHBOARD-NODEPORTS"));
    REQUIRE(
        contains_line(v4, "-A SWITCHBOARD-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN"));
    REQUIRE(contains_line(v4, "-A SWITCHBOARD-MARK-MASQ -j MARK --or-mark 0x4000"));
    REQUIRE(contains_line(v4, "-A SWITCHBOARD-POSTROUTING -j MASQUERADE --random-fully"));
    REQUIRE(contains_line(v4, "*filter"));
    REQUIRE(contains_line(v4, "-I FORWARD 1 -j SWITCHBOARD-FILTER-SERVICES"));
    // The NodePort dispatch comes after every address rule.
    const auto services_rules = r.model.v4.nat.chains.at(kServicesChain).rules;
    REQUIRE(services_rules.back().target.chain == kNodePortsChain);

    const std::string v6 = to_restore_text(r.model.v6);
    INFO(v6);
    REQUIRE(contains_line(v6, "-A " + endpoint_chain_name(p, p.cluster_endpoints[2]) +
                                  " -p tcp -j DNAT --to-destination [fd00:244:1::7]:8080"));
    REQUIRE(contains_line(v6,
                          "-A SWITCHBOARD-SERVICES ! -d ::1/128 -m addrtype --dst-type LOCAL "
                          "-j SWITCHBOARD-NODEPORTS"));
    // No IPv6 cluster CIDR: no masquerade-outside chain in IPv6.
    REQUIRE(v6.find("MASQ-OUTSIDE") == std::string::npos);
}

TEST_CASE("iptables render: localhost NodePorts bring kube-proxy's localnet guard, IPv4 only") {
    const ServicePortPlan p = web();  // IPv4 and IPv6
    const RenderResult on = render(plan_of({p}), options());
    const std::string v4 = to_restore_text(on.model.v4);
    INFO(v4);
    // kube-proxy's KUBE-FIREWALL rule, in switchboard's own chain, hooked
    // first from INPUT and OUTPUT (where kubelet and kube-proxy put theirs).
    REQUIRE(contains_line(v4,
                          "-A SWITCHBOARD-LOCALNET-GUARD ! -s 127.0.0.0/8 -d 127.0.0.0/8 -m "
                          "comment --comment \"block incoming localnet connections\" -m "
                          "conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP"));
    REQUIRE(contains_line(v4, "-I INPUT 1 -j SWITCHBOARD-LOCALNET-GUARD"));
    REQUIRE(contains_line(v4, "-I OUTPUT 1 -j SWITCHBOARD-LOCALNET-GUARD"));
    REQUIRE(v4.find("-I FORWARD 1 -j SWITCHBOARD-LOCALNET-GUARD") == std::string::npos);
    const std::string v6 = to_restore_text(on.model.v6);
    INFO(v6);
    REQUIRE(v6.find("LOCALNET-GUARD") == std::string::npos);
    REQUIRE(contains_line(v6,
                          "-A SWITCHBOARD-SERVICES ! -d ::1/128 -m addrtype --dst-type LOCAL "
                          "-j SWITCHBOARD-NODEPORTS"));

    BackendOptions off = options();
    off.localhost_node_ports = false;
    const std::string v4_off = to_restore_text(render(plan_of({p}), off).model.v4);
    INFO(v4_off);
    REQUIRE(v4_off.find("LOCALNET-GUARD") == std::string::npos);
    REQUIRE(contains_line(v4_off,
                          "-A SWITCHBOARD-SERVICES ! -d 127.0.0.0/8 -m addrtype --dst-type "
                          "LOCAL -j SWITCHBOARD-NODEPORTS"));
}

TEST_CASE("iptables render: when localhost NodePorts are effective") {
    BackendOptions o = options();
    REQUIRE(localhost_node_ports_effective(o));  // kube-proxy's default, every address
    o.localhost_node_ports = false;
    REQUIRE_FALSE(localhost_node_ports_effective(o));
    for (const auto& [addresses, effective] :
         std::vector<std::pair<std::vector<const char*>, bool>>{
             {{"192.168.1.0/24"}, false},
             {{"192.168.1.0/24", "127.0.0.1/32"}, true},
             {{"127.0.0.0/8"}, true},
             {{"0.0.0.0/0"}, true},
             {{"64.0.0.0/2"}, true},  // holds 127.0.0.0
             {{"::/0"}, false},       // nothing in IPv4: no IPv4 NodePort at all here
             {{"::1/128", "192.168.1.0/24"}, false},
         }) {
        BackendOptions with = options();
        for (const char* a : addresses) with.nodeport_addresses.push_back(*Prefix::parse(a));
        INFO(addresses.front());
        CHECK(localhost_node_ports_effective(with) == effective);
        with.localhost_node_ports = false;
        CHECK_FALSE(localhost_node_ports_effective(with));
    }
}

TEST_CASE("iptables render: affinity uses recent lists named after the endpoint chains") {
    const ServicePortPlan p = web();
    const RenderResult r = render(plan_of({p}), options());
    const std::string v4 = to_restore_text(r.model.v4);
    const std::string sep = endpoint_chain_name(p, p.cluster_endpoints[0]);
    INFO(v4);
    REQUIRE(contains_line(v4, "-A " + service_chain_name("SVC", p) +
                                  " -m recent --rcheck --seconds 10800 --reap --name " + sep +
                                  " --rsource -j " + sep));
    REQUIRE(contains_line(v4, "-A " + sep + " -p tcp -m recent --set --name " + sep +
                                  " --rsource -j DNAT --to-destination 10.244.1.7:8080"));
    // One endpoint chain per endpoint, shared by the SVC and SVL chains.
    size_t seps = 0;
    for (const auto& [name, chain] : r.model.v4.nat.chains) {
        if (name.rfind("SWITCHBOARD-SEP-", 0) == 0) ++seps;
    }
    REQUIRE(seps == 2);
}

TEST_CASE("iptables render: no endpoints rejects with tcp-reset or port unreachable") {
    ServicePortPlan tcp = web();
    tcp.cluster_endpoints.clear();
    tcp.local_endpoints.clear();
    ServicePortPlan udp = tcp;
    udp.protocol = Protocol::kUDP;
    const RenderResult r = render(plan_of({tcp, udp}), options());
    const std::string v4 = to_restore_text(r.model.v4);
    const std::string v6 = to_restore_text(r.model.v6);
    INFO(v4);
    REQUIRE(contains_line(v4,
                          "-A SWITCHBOARD-FILTER-SERVICES -d 10.96.0.10/32 -p tcp -m comment "
                          "--comment \"default/web:http/TCP has no endpoints\" -m tcp --dport 80 "
                          "-j REJECT --reject-with tcp-reset"));
    REQUIRE(contains_line(v4,
                          "-A SWITCHBOARD-FILTER-SERVICES -d 10.96.0.10/32 -p udp -m comment "
                          "--comment \"default/web:http/UDP has no endpoints\" -m udp --dport 80 "
                          "-j REJECT --reject-with icmp-port-unreachable"));
    REQUIRE(v6.find("-j REJECT --reject-with icmp6-port-unreachable") != std::string::npos);
    // Nothing in nat for them but the fixed chains.
    for (const auto& [name, chain] : r.model.v4.nat.chains) {
        REQUIRE(name.find("-SVC-") == std::string::npos);
    }
}

TEST_CASE("iptables render: a bad service port is skipped with an error naming it") {
    ServicePortPlan bad = web();
    bad.service = "bad";
    bad.cluster_endpoints[1].port = 0;
    ServicePortPlan two_v4 = web();
    two_v4.service = "two";
    two_v4.cluster_ips = {ip("10.96.0.11"), ip("10.96.0.12")};
    ServicePortPlan none = web();
    none.service = "none";
    none.cluster_ips.clear();
    const RenderResult r = render(plan_of({bad, web(), two_v4, none}), options());
    REQUIRE(r.errors.size() == 3);
    REQUIRE(r.errors[0].find("default/bad:http/TCP") != std::string::npos);
    REQUIRE(r.errors[0].find("port 0") != std::string::npos);
    REQUIRE(r.errors[1].find("default/two") != std::string::npos);
    REQUIRE(r.errors[2].find("no clusterIPs") != std::string::npos);
    REQUIRE(r.model.v4.nat.chains.count(service_chain_name("SVC", web())) == 1);
    REQUIRE(r.model.v4.nat.chains.count(service_chain_name("SVC", bad)) == 0);
    BackendOptions zero = options();
    zero.masquerade_mark = 0;
    REQUIRE_FALSE(validate_options(zero));
}

TEST_CASE("iptables render: deterministic, distinct names per service, kernel probabilities") {
    const RenderResult a = render(plan_of({web()}), options());
    const RenderResult b = render(plan_of({web()}), options());
    REQUIRE(a.model.v4 == b.model.v4);
    REQUIRE(a.model.v6 == b.model.v6);
    ServicePortPlan other = web();
    other.port_name = "https";
    REQUIRE(service_chain_name("SVC", other) != service_chain_name("SVC", web()));
    REQUIRE(service_chain_name("SVC", web()) != service_chain_name("SVL", web()));
    REQUIRE(service_chain_name("SVC", web()).size() == 28);
    REQUIRE(statistic_probability(1) == 0x80000000U);
    REQUIRE(statistic_probability(2) == 0x40000000U);
    REQUIRE(statistic_probability(3) == 715827883U);
}
