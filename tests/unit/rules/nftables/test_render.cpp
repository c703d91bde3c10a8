// Rendering details, validation and the diff: an incremental change touches
// only the affected service chains and map elements, and reaches the same
// model as a full render.
#include <netinet/in.h>
#include <catch.hpp>

#include <algorithm>
#include <random>

#include "rules/nftables/diff.h"
#include "rules/nftables/render.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::nftables;
using sb::rules::testing::ip;

namespace {

ServicePortPlan port_plan(int index, int endpoints) {
    ServicePortPlan p;
    p.ns = "ns";
    p.service = "svc-" + std::to_string(1000 + index);
    p.port_name = "http";
    p.cluster_ips = {IpAddress::v4(0x0a600000u + static_cast<uint32_t>(index))};
    p.port = 80;
    for (int e = 0; e < endpoints; ++e) {
        Endpoint ep;
        ep.ip = IpAddress::v4(0x0af40000u + static_cast<uint32_t>(index * 16 + e));
        ep.port = 8080;
        ep.ready = ep.serving = true;
        ep.is_local = e == 0;
        p.cluster_endpoints.push_back(ep);
        if (ep.is_local) p.local_endpoints.push_back(ep);
    }
    return p;
}

Plan plan_of(int services, int endpoints) {
    Plan plan;
    for (int i = 0; i < services; ++i) plan.services.push_back(port_plan(i, endpoints));
    return plan;
}

bool same_kernel_state(const Model& a, const Model& b) {
    if (a.chains != b.chains || a.sets.size() != b.sets.size()) return false;
    for (const auto& [name, set] : a.sets) {
        auto it = b.sets.find(name);
        if (it == b.sets.end() || it->second.elements != set.elements) return false;
    }
    return true;
}

}  // namespace

TEST_CASE("chain names are deterministic, distinct and valid nft identifiers") {
    ServicePortPlan p = port_plan(1, 1);
    const std::string a = service_chain_name("svc", IpFamily::kV4, p);
    REQUIRE(a == service_chain_name("svc", IpFamily::kV4, p));
    REQUIRE(a.rfind("svc4-", 0) == 0);
    REQUIRE(a != service_chain_name("svc", IpFamily::kV6, p));
    ServicePortPlan q = p;
    q.port_name = "https";
    REQUIRE(a != service_chain_name("svc", IpFamily::kV4, q));
    q.service = std::string(300, 'x');
    const std::string long_name = service_chain_name("svc", IpFamily::kV4, q);
    REQUIRE(long_name.size() <= 200);
    for (char c : long_name + a) {
        REQUIRE((std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '/'));
    }
}

TEST_CASE("invalid service ports are skipped with an error naming them, others kept") {
    Plan plan = plan_of(2, 1);
    plan.services[0].port = 0;
    RenderResult r = render(plan, {});
    REQUIRE(r.errors.size() == 1);
    REQUIRE(r.errors[0].find(plan.services[0].id()) != std::string::npos);
    REQUIRE(r.errors[0].find("port") != std::string::npos);
    const auto& services = r.model.sets.at(services_map(IpFamily::kV4)).elements;
    REQUIRE(services.size() == 1);
    REQUIRE(services.begin()->first.a == plan.services[1].cluster_ips[0]);

    ServicePortPlan two_v4 = port_plan(3, 1);
    two_v4.cluster_ips.push_back(ip("10.96.9.9"));
    REQUIRE_FALSE(validate_service(two_v4));
    ServicePortPlan bad_endpoint = port_plan(4, 1);
    bad_endpoint.cluster_endpoints[0].port = 0;
    REQUIRE_FALSE(validate_service(bad_endpoint));
    ServicePortPlan no_ip = port_plan(5, 1);
    no_ip.cluster_ips.clear();
    REQUIRE_FALSE(validate_service(no_ip));
    BackendOptions zero_mark;
    zero_mark.masquerade_mark = 0;
    REQUIRE_FALSE(validate_options(zero_mark));
}

TEST_CASE("the interface modes of --detect-local-mode need a name the kernel could give") {
    for (const LocalDetectMode mode :
         {LocalDetectMode::kBridgeInterface, LocalDetectMode::kInterfaceNamePrefix}) {
        BackendOptions o;
        o.local_detect_mode = mode;
        for (const char* good : {"cbr0", "v", "cni-podnet_1.x", "abcdefghijklmno"}) {
            o.local_interface = good;
            INFO(good);
            REQUIRE(validate_options(o));
        }
        for (const std::string& bad :
             {std::string(), std::string("abcdefghijklmnop"), std::string("a/b"),
              std::string("a b"), std::string("a\tb"), std::string("a\0b", 3), std::string("a:b"),
              std::string("a\"b"), std::string("veth*"), std::string("veth+"),
              std::string("a\x7f")}) {
            o.local_interface = bad;
            INFO(bad);
            const Status s = validate_options(o);
            REQUIRE_FALSE(s);
            // One printable line, naming the option.
            REQUIRE(std::none_of(s.error().message.begin(), s.error().message.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x20; }));
            REQUIRE(s.error().message.find(mode == LocalDetectMode::kBridgeInterface
                                               ? "bridge interface"
                                               : "interface name prefix") != std::string::npos);
        }
    }
    // The CIDR modes do not use the name.
    BackendOptions cidr;
    cidr.local_detect_mode = LocalDetectMode::kNodeCidr;
    cidr.local_interface = "a b";
    REQUIRE(validate_options(cidr));
}

TEST_CASE("without affinity a service port has no chain: shared dnat chains and map elements") {
    const Model one = render(plan_of(1, 4), {}).model;
    const Model many = render(plan_of(50, 4), {}).model;
    // 50 services with 4 endpoints share one dnat chain; only elements grow.
    REQUIRE(many.chains.size() == one.chains.size());
    REQUIRE(many.sets.size() == one.sets.size());
    const Chain& dnat = many.chains.at("dnat4-4");
    REQUIRE(dnat.rules.size() == 1);
    REQUIRE(dnat.rules[0][1].kind == ExprKind::kDnatByAddress);
    REQUIRE(dnat.rules[0][1].value == 4);
    REQUIRE(many.sets.at(backends_map(IpFamily::kV4, false, false)).elements.size() == 200);
    const ElementKey slot2{IpAddress::v4(0x0a600000u + 7), {}, 6, 80, 2};
    const Verdict& target =
        many.sets.at(backends_map(IpFamily::kV4, false, false)).elements.at(slot2);
    REQUIRE(target.address == IpAddress::v4(0x0af40000u + 7 * 16 + 2));
    REQUIRE(target.port == 8080);
}

TEST_CASE("with affinity the endpoint choice is a per-service linear cascade") {
    Plan plan = plan_of(1, 4);
    plan.services[0].session_affinity = {true, 60};
    const Model m = render(plan, {}).model;
    const Chain& chain = m.chains.at(service_chain_name("svc", IpFamily::kV4, plan.services[0]));
    REQUIRE(chain.rules.size() == 5);  // affinity lookup + 4 endpoints
    REQUIRE(chain.rules[0].back().kind == ExprKind::kAffinityDnat);
    REQUIRE(chain.rules[1][0].kind == ExprKind::kNumgen);
    REQUIRE(chain.rules[1][0].value == 4);
    REQUIRE(chain.rules[3][0].value == 2);
    REQUIRE(chain.rules[4][0].kind != ExprKind::kNumgen);
}

TEST_CASE("full diff against an empty kernel creates everything; against itself nothing") {
    const Model m = render(plan_of(3, 2), {}).model;
    const Delta create = diff(Model{}, m, true);
    REQUIRE(create.add_chains.size() == m.chains.size());
    REQUIRE(create.add_sets.size() == m.sets.size());
    REQUIRE(create.flush_chains.empty());
    REQUIRE(create.add_elements.empty());  // every set is filled whole
    // Its text adds each element of the model once, with its value.
    const std::string text = to_nft_text(create, m);
    size_t element_lines = 0;
    for (size_t at = text.find("add element "); at != std::string::npos;
         at = text.find("add element ", at + 1)) {
        ++element_lines;
    }
    size_t model_elements = 0;
    for (const auto& [name, set] : m.sets) {
        model_elements += set.elements.size();
        for (const auto& [key, value] : set.elements) {
            REQUIRE(text.find(element_text(set, key, value)) != std::string::npos);
        }
    }
    REQUIRE(model_elements > 0);
    REQUIRE(element_lines == model_elements);
    REQUIRE(diff(m, m, true).empty());
    // Contents unknown (read back from the kernel): existing chains and static
    // sets are flushed and refilled in the same transaction, nothing is
    // deleted or recreated, dynamic (affinity) sets are left alone.
    Model kernel = m;
    for (auto& [name, chain] : kernel.chains) chain.rules.clear();
    for (auto& [name, set] : kernel.sets) set.elements.clear();
    const Delta adopt = diff(kernel, m, false);
    REQUIRE(adopt.add_chains.empty());
    REQUIRE(adopt.del_chains.empty());
    REQUIRE(adopt.add_sets.empty());
    REQUIRE(adopt.del_sets.empty());
    REQUIRE(adopt.flush_chains.size() == m.chains.size());
    REQUIRE(adopt.flush_sets.size() == m.sets.size() - 2);  // all but affinity4/6
    // Refilled sets are named, not listed element by element.
    size_t elements = 0;
    std::vector<std::string> filled;
    for (const auto& [name, set] : m.sets) {
        elements += set.elements.size();
        if (!set.elements.empty()) filled.push_back(name);
    }
    REQUIRE(elements > 0);
    REQUIRE(adopt.fill_sets == filled);
    REQUIRE(adopt.add_elements.empty());
    REQUIRE(adopt.del_elements.empty());
    size_t rules = 0;
    for (const auto& [name, chain] : m.chains) rules += chain.rules.size();
    REQUIRE(adopt.objects(m) ==
            adopt.flush_chains.size() + adopt.flush_sets.size() + rules + elements);
}

TEST_CASE("drift: a deleted chain and a foreign element are repaired") {
    const Model m = render(plan_of(3, 2), {}).model;
    Model kernel = m;
    const std::string victim = "dnat4-2";
    kernel.chains.erase(victim);
    kernel.sets.at(services_map(IpFamily::kV4))
        .elements.insert_or_assign(ElementKey{ip("10.1.1.1"), {}, 6, 1},
                                   Verdict{VerdictKind::kDrop, {}});
    kernel.chains["stale-chain"] = Chain{"stale-chain", std::nullopt, {}};
    const Delta d = diff(kernel, m, true);
    REQUIRE(d.add_chains == std::vector<std::string>{victim});
    REQUIRE(d.del_chains == std::vector<std::string>{"stale-chain"});
    REQUIRE(d.del_elements.size() == 1);
    REQUIRE(d.add_elements.empty());
}

TEST_CASE("one endpoint change yields only that service's chain and elements") {
    const Plan before = plan_of(20, 3);
    Plan after = before;
    after.services[7].cluster_endpoints[2].ip = ip("10.250.0.1");
    Model model = render(before, {}).model;
    const Fragment old_fragment = render_service(before.services[7], {});
    const Fragment new_fragment = render_service(after.services[7], {});
    const Delta d = update_model(model, {{&old_fragment, &new_fragment}});
    // No chain, no rule: the backend element of slot 2 and the hairpin pair.
    REQUIRE(d.flush_chains.empty());
    REQUIRE(d.fill_chains.empty());
    REQUIRE(d.add_chains.empty());
    REQUIRE(d.del_chains.empty());
    REQUIRE(d.add_sets.empty());
    REQUIRE(d.del_elements.size() == 2);
    REQUIRE(d.add_elements.size() == 2);
    const std::string backends = backends_map(IpFamily::kV4, false, false);
    const ElementKey slot2{before.services[7].cluster_ips[0], {}, 6, 80, 2};
    REQUIRE(std::count(d.add_elements.begin(), d.add_elements.end(), ElementId{backends, slot2}) ==
            1);
    REQUIRE(std::count(d.add_elements.begin(), d.add_elements.end(),
                       ElementId{hairpin_set(IpFamily::kV4),
                                 ElementKey{ip("10.250.0.1"), ip("10.250.0.1")}}) == 1);
    REQUIRE(d.objects(model) == 4);
    REQUIRE(same_kernel_state(model, render(after, {}).model));
}

TEST_CASE("an endpoint count change swaps the dispatch element to another shared chain") {
    const Plan before = plan_of(5, 3);
    Plan after = before;
    after.services[2].cluster_endpoints.pop_back();
    Model model = render(before, {}).model;
    const Fragment o = render_service(before.services[2], {});
    const Fragment n = render_service(after.services[2], {});
    const Delta d = update_model(model, {{&o, &n}});
    REQUIRE(d.add_chains == std::vector<std::string>{"dnat4-2"});
    REQUIRE(d.del_chains.empty());  // dnat4-3 is still used by the others
    REQUIRE(model.sets.at(services_map(IpFamily::kV4))
                .elements.at(ElementKey{before.services[2].cluster_ips[0], {}, 6, 80}) ==
            Verdict(VerdictKind::kGoto, "dnat4-2"));
    REQUIRE(same_kernel_state(model, render(after, {}).model));
}

TEST_CASE("a service losing its last endpoint swaps its dispatch element for a reject") {
    const Plan before = plan_of(3, 1);
    Plan after = before;
    after.services[1].cluster_endpoints.clear();
    after.services[1].local_endpoints.clear();
    Model model = render(before, {}).model;
    const Fragment o = render_service(before.services[1], {});
    const Fragment n = render_service(after.services[1], {});
    const Delta d = update_model(model, {{&o, &n}});
    REQUIRE(d.del_chains.empty());  // the shared dnat4-1 serves the other two
    REQUIRE(model.sets.at(no_endpoints_map(IpFamily::kV4)).elements.size() == 1);
    REQUIRE(model.sets.at(services_map(IpFamily::kV4)).elements.size() == 2);
    REQUIRE(same_kernel_state(model, render(after, {}).model));
}

TEST_CASE("an element two service ports contribute stays until both are removed") {
    Plan plan = plan_of(2, 1);
    plan.services[1].cluster_endpoints = plan.services[0].cluster_endpoints;
    plan.services[1].local_endpoints = plan.services[0].local_endpoints;
    const IpAddress shared_ip = plan.services[0].cluster_endpoints[0].ip;
    const ElementKey pair{shared_ip, shared_ip};
    const Fragment first = render_service(plan.services[0], {});
    const Fragment second = render_service(plan.services[1], {});
    Model model = render_base({});
    add_fragment(model, first);
    add_fragment(model, second);
    const Set& hairpin = model.sets.at(hairpin_set(IpFamily::kV4));
    REQUIRE(hairpin.elements.count(pair) == 1);
    // Each fragment names the pair once, though it is in both endpoint lists.
    REQUIRE(hairpin.shared_refs.at(pair) == 1);
    remove_fragment(model, first);
    REQUIRE(hairpin.elements.count(pair) == 1);
    REQUIRE(hairpin.shared_refs.empty());
    remove_fragment(model, second);
    REQUIRE(hairpin.elements.empty());
    REQUIRE(hairpin.shared_refs.empty());
    // Elements with one contributor take no count.
    const Model alone = render(plan_of(3, 2), {}).model;
    const Set& backends = alone.sets.at(backends_map(IpFamily::kV4, false, false));
    REQUIRE(backends.elements.size() == 6);
    for (const auto& [name, set] : alone.sets) REQUIRE(set.shared_refs.empty());
}

TEST_CASE("incremental updates reach the same model as a full render (randomised)") {
    std::mt19937 rng(42);
    Plan current = plan_of(30, 3);
    Model model = render(current, {}).model;
    for (int round = 0; round < 40; ++round) {
        Plan next = current;
        const size_t i = rng() % next.services.size();
        ServicePortPlan& p = next.services[i];
        switch (rng() % 6) {
            case 0:
                p.cluster_endpoints.clear();
                p.local_endpoints.clear();
                break;
            case 1:
                p = port_plan(static_cast<int>(i), 1 + static_cast<int>(rng() % 4));
                break;
            case 2:
                p.node_port = p.node_port ? 0 : static_cast<uint16_t>(30000 + i);
                break;
            case 3:
                p.external_traffic_policy = p.external_traffic_policy == TrafficPolicy::kLocal
                                                ? TrafficPolicy::kCluster
                                                : TrafficPolicy::kLocal;
                p.node_port = static_cast<uint16_t>(31000 + i);
                break;
            case 4:
                // Two services share an endpoint: the hairpin element is reference counted.
                p.cluster_endpoints =
                    next.services[(i + 1) % next.services.size()].cluster_endpoints;
                break;
            case 5:
                // Affinity switches between the mapped and the chained shape.
                p.session_affinity.client_ip = !p.session_affinity.client_ip;
                break;
        }
        const Fragment o = render_service(current.services[i], {});
        const Fragment n = render_service(next.services[i], {});
        update_model(model, {{&o, &n}});
        INFO("round " << round);
        REQUIRE(same_kernel_state(model, render(next, {}).model));
        current = next;
    }
}

TEST_CASE("render text is the model in nft syntax") {
    Plan plan = plan_of(1, 2);
    plan.services[0].node_port = 30080;
    const std::string text = to_nft_text(render(plan, {}).model);
    REQUIRE(text.rfind("table inet switchboard {", 0) == 0);
    REQUIRE(text.find("type nat hook prerouting priority -100; policy accept;") !=
            std::string::npos);
    REQUIRE(text.find("10.96.0.0 . tcp . 80 : goto dnat4-2") != std::string::npos);
    REQUIRE(text.find("meta nfproto ipv4 dnat ip to ip daddr . meta l4proto . th dport . numgen "
                      "random mod 2 map "
                      "@backends4") != std::string::npos);
    REQUIRE(text.find("10.96.0.0 . tcp . 80 . 1 : 10.244.0.1 . 8080") != std::string::npos);
    REQUIRE(text.find("tcp . 30080 : goto np-ext-dnat4-2") != std::string::npos);
    REQUIRE(text.find("tcp . 30080 . 0 : 10.244.0.0 . 8080") != std::string::npos);
}

TEST_CASE("changed_ports finds added, removed and changed service ports; unsorted: none") {
    const Plan before = plan_of(5, 2);
    Plan after = before;
    after.services.erase(after.services.begin() + 1);    // removed
    after.services[2].cluster_endpoints[0].port = 9090;  // changed (svc-1003)
    after.services.push_back(port_plan(7, 1));           // added (svc-1007)
    const auto changed = changed_ports(before, after);
    REQUIRE(changed);
    REQUIRE(changed->size() == 3);
    REQUIRE((*changed)[0].first == &before.services[1]);
    REQUIRE((*changed)[0].second == nullptr);
    REQUIRE((*changed)[1].first == &before.services[3]);
    REQUIRE((*changed)[1].second == &after.services[2]);
    REQUIRE((*changed)[2].first == nullptr);
    REQUIRE((*changed)[2].second == &after.services.back());
    REQUIRE(changed_ports(before, before)->empty());
    Plan unsorted = before;
    std::swap(unsorted.services[0], unsorted.services[4]);
    REQUIRE_FALSE(changed_ports(before, unsorted));
}
