// Chain-name hash collisions (rules/iptables/chain_names.h), forced with an
// injected hash: the later service port or endpoint is skipped with an
// error and counted, never merged into the earlier one's chains.
#include <netinet/in.h>
#include <catch.hpp>

#include <string>
#include <string_view>

#include "rules/iptables/render.h"
#include "tests/unit/rules/iptables/tracer.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using namespace sb::rules::iptables;
using sb::rules::iptables::testing::Tracer;
using sb::rules::testing::endpoint;
using sb::rules::testing::ip;
using sb::rules::testing::kNode;

namespace {

ServicePortPlan port_named(const char* service, const char* cluster_ip, const char* endpoint_ip) {
    ServicePortPlan p;
    p.ns = "default";
    p.service = service;
    p.port_name = "http";
    p.cluster_ips = {ip(cluster_ip)};
    p.port = 80;
    p.cluster_endpoints = {endpoint(endpoint_ip, 8080, false)};
    return p;
}

Plan two_services() {
    Plan plan;
    plan.node = "node-a";
    plan.services = {port_named("a", "10.96.0.10", "10.244.1.1"),
                     port_named("b", "10.96.0.11", "10.244.1.2")};
    return plan;
}

// Every service port hashes alike; endpoints keep the real hash.
std::string same_for_services(std::string_view text) {
    if (text.find(' ') == std::string_view::npos) return "SAMESAMESAME";
    return default_chain_hash(text);
}

// Every endpoint hashes alike; service ports keep the real hash.
std::string same_for_endpoints(std::string_view text) {
    if (text.find(' ') != std::string_view::npos) return "SAMESAMESAME";
    return default_chain_hash(text);
}

}  // namespace

TEST_CASE("chain names: the real hash gives distinct names and no collision") {
    const RenderResult r = render(two_services(), {});
    CHECK(r.errors.empty());
    CHECK(r.chain_name_collisions == 0);
    const Plan plan = two_services();
    CHECK(service_chain_name("SVC", plan.services[0]) !=
          service_chain_name("SVC", plan.services[1]));
}

TEST_CASE("chain names: a colliding service port is skipped, not merged") {
    const Plan plan = two_services();
    const RenderResult r = render(plan, {}, same_for_services);
    REQUIRE(r.chain_name_collisions == 1);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].find("default/b:http/TCP") != std::string::npos);
    CHECK(r.errors[0].find("default/a:http/TCP") != std::string::npos);
    // a keeps its endpoint; b's address leads nowhere (not to a's endpoint).
    const Tracer tracer(r.model.v4, {kNode});
    const rules::testing::Packet to_a{ip("10.244.0.5"), ip("10.96.0.10"), IPPROTO_TCP, 80};
    const rules::testing::Packet to_b{ip("10.244.0.5"), ip("10.96.0.11"), IPPROTO_TCP, 80};
    const auto a = tracer.trace(to_a);
    const auto b = tracer.trace(to_b);
    REQUIRE(a.size() == 1);
    REQUIRE(a[0].dnat);
    CHECK(a[0].dnat->first == ip("10.244.1.1"));
    REQUIRE(b.size() == 1);
    CHECK_FALSE(b[0].dnat);
}

TEST_CASE("chain names: a colliding endpoint is skipped, its port keeps the others") {
    Plan plan = two_services();
    plan.services[1].cluster_endpoints.push_back(endpoint("10.244.1.3", 8080, false));
    // Only the first endpoint of all keeps the shared hash: a's.
    const RenderResult r = render(plan, {}, same_for_endpoints);
    CHECK(r.chain_name_collisions == 2);
    REQUIRE(r.errors.size() == 2);
    CHECK(r.errors[0].find("endpoint 10.244.1.2 port 8080") != std::string::npos);
    const Tracer tracer(r.model.v4, {kNode});
    const auto a = tracer.trace({ip("10.244.0.5"), ip("10.96.0.10"), IPPROTO_TCP, 80});
    REQUIRE(a.size() == 1);
    REQUIRE(a[0].dnat);
    CHECK(a[0].dnat->first == ip("10.244.1.1"));
    // b lost both endpoints to the collision: refused, never sent to a's pod.
    const auto b = tracer.trace({ip("10.244.0.5"), ip("10.96.0.11"), IPPROTO_TCP, 80});
    REQUIRE(b.size() == 1);
    CHECK_FALSE(b[0].dnat);
    CHECK(b[0].fate == rules::testing::Fate::kReject);
}

TEST_CASE("chain names: the same endpoint in the cluster and local lists is no collision") {
    Plan plan = two_services();
    plan.services[0].cluster_endpoints[0].is_local = true;
    plan.services[0].local_endpoints = plan.services[0].cluster_endpoints;
    const RenderResult r = render(plan, {}, same_for_endpoints);
    // b's endpoint collides with a's; a's own two listings do not.
    CHECK(r.chain_name_collisions == 1);
}
