// The planner's rules (docs/planner.md), one test case each. Objects are
// built directly, not decoded, so these tests depend on the planner alone.
#include <catch.hpp>

#include <algorithm>

#include "proxy/sync/planner.h"
#include "watch/snapshot_builder.h"

using namespace sb;
using sb::proxy::build_plan;
using sb::proxy::plan_service;
using sb::proxy::PlannerOptions;

namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}

const char* kNode = "node-a";

watch::ServicePort service_port(const std::string& name, uint16_t port,
                                watch::Protocol protocol = watch::Protocol::kTCP) {
    watch::ServicePort result;
    result.name = name;
    result.port = port;
    result.protocol = protocol;
    result.target_port.number = port;
    return result;
}

watch::Service make_service(const std::string& ns = "default", const std::string& name = "web") {
    watch::Service service;
    service.meta.ns = ns;
    service.meta.name = name;
    service.cluster_ips = {ip("10.96.0.10")};
    service.ip_families = {IpFamily::kV4};
    service.has_selector = true;
    service.ports = {service_port("http", 80)};
    return service;
}

struct EndpointSpec {
    const char* address;
    const char* node = "node-b";
    bool ready = true;
    bool serving = true;
    bool terminating = false;
    std::vector<std::string> zone_hints = {};
    std::vector<std::string> node_hints = {};
};

watch::Endpoint endpoint(const EndpointSpec& spec) {
    watch::Endpoint result;
    result.addresses = {ip(spec.address)};
    result.node_name = spec.node;
    result.zone = spec.node == std::string("node-a") ? "zone-a" : "zone-b";
    result.ready = spec.ready;
    result.serving = spec.serving;
    result.terminating = spec.terminating;
    if (!spec.zone_hints.empty() || !spec.node_hints.empty()) {
        result.hints = std::make_shared<const watch::EndpointHints>(
            watch::EndpointHints{spec.zone_hints, spec.node_hints});
    }
    return result;
}

std::shared_ptr<const watch::EndpointSlice> make_slice(
    const std::string& name, const std::vector<EndpointSpec>& endpoints,
    std::vector<watch::EndpointPort> ports = {{"http", watch::Protocol::kTCP, 8080}},
    watch::AddressType type = watch::AddressType::kIPv4, const std::string& service = "web") {
    auto slice = std::make_shared<watch::EndpointSlice>();
    slice->meta.ns = "default";
    slice->meta.name = name;
    slice->meta.labels[watch::kServiceNameLabel] = service;
    slice->service_name = service;
    slice->address_type = type;
    for (const auto& spec : endpoints) slice->endpoints.push_back(endpoint(spec));
    slice->ports = std::move(ports);
    return slice;
}

using Slices = std::vector<std::shared_ptr<const watch::EndpointSlice>>;

watch::Node make_node(const std::string& name, const std::string& zone) {
    watch::Node node;
    node.meta.name = name;
    node.meta.labels[watch::kZoneLabel] = zone;
    return node;
}

const watch::Node kNodeA = make_node("node-a", "zone-a");

std::vector<rules::ServicePortPlan> plan(const watch::Service& service, const Slices& slices,
                                         const watch::Node* node = &kNodeA) {
    return plan_service(service, slices, node, PlannerOptions{kNode});
}

rules::ServicePortPlan plan_one(const watch::Service& service, const Slices& slices,
                                const watch::Node* node = &kNodeA) {
    auto plans = plan(service, slices, node);
    REQUIRE(plans.size() == 1);
    return plans.front();
}

std::vector<std::string> ips(const rules::EndpointList& endpoints) {
    std::vector<std::string> result;
    for (const auto& endpoint : endpoints) result.push_back(endpoint.ip.to_string());
    return result;
}

using Strings = std::vector<std::string>;

}  // namespace

// --- ready / serving / terminating -------------------------------------

TEST_CASE("cluster endpoints are the ready ones when any is ready") {
    auto slice = make_slice("web-1", {{"10.244.1.5"},
                                      {"10.244.1.6", "node-b", false, true, true},
                                      {"10.244.1.7", "node-b", false, false, false}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5"});
    CHECK(result.cluster_endpoints[0].port == 8080);
    CHECK(result.cluster_endpoints[0].ready);
}

TEST_CASE("cluster endpoints fall back to serving and terminating ones when none is ready") {
    auto slice = make_slice("web-1", {{"10.244.1.6", "node-b", false, true, true},
                                      {"10.244.1.7", "node-b", false, false, true},
                                      {"10.244.1.8", "node-b", false, false, false}});
    auto result = plan_one(make_service(), {slice});
    REQUIRE(ips(result.cluster_endpoints) == Strings{"10.244.1.6"});
    CHECK(result.cluster_endpoints[0].terminating);
    CHECK(result.cluster_endpoints[0].serving);
    CHECK_FALSE(result.cluster_endpoints[0].ready);
}

TEST_CASE("cluster endpoints are empty when none is ready or serving-terminating") {
    auto slice = make_slice("web-1", {{"10.244.1.7", "node-b", false, false, true},
                                      {"10.244.1.8", "node-b", false, false, false}});
    auto result = plan_one(make_service(), {slice});
    CHECK(result.cluster_endpoints.empty());
    CHECK(result.local_endpoints.empty());
}

TEST_CASE("serving endpoints neither list holds are the other serving ones") {
    // Terminating while ready ones exist (here and on this node), ready but
    // left out by zone hints; never the ones that do not serve.
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-b"}},
                                      {"10.244.0.6", "node-a", false, true, true},
                                      {"10.244.1.5", "node-b", true, true, false, {"zone-a"}},
                                      {"10.244.1.6", "node-b", false, true, true},
                                      {"10.244.1.7", "node-b", false, false, true},
                                      {"10.244.1.8", "node-b", false, false, false},
                                      {"10.244.1.9", "node-b", true, true, false, {"zone-b"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5"});
    CHECK(ips(result.local_endpoints) == Strings{"10.244.0.5"});
    CHECK(ips(result.other_serving_endpoints) == Strings{"10.244.0.6", "10.244.1.6", "10.244.1.9"});
}

TEST_CASE("no endpoint is other serving when the lists fall back to the terminating ones") {
    auto slice = make_slice("web-1", {{"10.244.0.6", "node-a", false, true, true},
                                      {"10.244.1.6", "node-b", false, true, true}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.6", "10.244.1.6"});
    CHECK(result.other_serving_endpoints.empty());
}

TEST_CASE("local endpoints are the ready ones on this node") {
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a"},
                                      {"10.244.0.6", "node-a", false, true, true},
                                      {"10.244.1.5", "node-b"}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.local_endpoints) == Strings{"10.244.0.5"});
    CHECK(result.local_endpoints[0].is_local);
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.5", "10.244.1.5"});
    CHECK(result.cluster_endpoints[0].is_local);
    CHECK_FALSE(result.cluster_endpoints[1].is_local);
}

TEST_CASE("local endpoints equal to the cluster ones are the same block") {
    // Every endpoint on this node: the plan holds the list once
    // (rules::EndpointList).
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a"}, {"10.244.0.6", "node-a"}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.local_endpoints) == Strings{"10.244.0.5", "10.244.0.6"});
    CHECK(result.local_endpoints.shares(result.cluster_endpoints));
}

TEST_CASE("local endpoints fall back to serving-terminating independently of cluster ones") {
    // A ready endpoint elsewhere does not stop the local fallback.
    auto slice = make_slice("web-1", {{"10.244.0.6", "node-a", false, true, true},
                                      {"10.244.0.7", "node-a", false, false, true},
                                      {"10.244.1.5", "node-b"}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5"});
    CHECK(ips(result.local_endpoints) == Strings{"10.244.0.6"});
}

TEST_CASE("local endpoints are empty when no endpoint runs on this node") {
    auto slice = make_slice("web-1", {{"10.244.1.5", "node-b"}, {"10.244.2.5", "node-c"}});
    auto result = plan_one(make_service(), {slice});
    CHECK(result.local_endpoints.empty());
    CHECK(result.cluster_endpoints.size() == 2);
}

TEST_CASE("an empty node name makes no endpoint local") {
    auto slice = make_slice("web-1", {{"10.244.1.5", ""}});
    auto plans = plan_service(make_service(), {slice}, nullptr, PlannerOptions{""});
    REQUIRE(plans.size() == 1);
    CHECK(plans[0].local_endpoints.empty());
    CHECK(plans[0].cluster_endpoints.size() == 1);
}

// --- merging slices -------------------------------------------------------

TEST_CASE("endpoints of all slices are merged and duplicates kept once, preferring ready") {
    auto first = make_slice("web-1", {{"10.244.1.5", "node-b", false, true, true}, {"10.244.1.6"}});
    auto second = make_slice("web-2", {{"10.244.1.5"}, {"10.244.2.9", "node-c"}});
    for (const Slices& order : {Slices{first, second}, Slices{second, first}}) {
        auto result = plan_one(make_service(), order);
        REQUIRE(ips(result.cluster_endpoints) == Strings{"10.244.1.5", "10.244.1.6", "10.244.2.9"});
        CHECK(result.cluster_endpoints[0].ready);
        CHECK_FALSE(result.cluster_endpoints[0].terminating);
    }
}

TEST_CASE("the same address on two different ports is two endpoints") {
    auto first = make_slice("web-1", {{"10.244.1.5"}}, {{"http", watch::Protocol::kTCP, 8080}});
    auto second = make_slice("web-2", {{"10.244.1.5"}}, {{"http", watch::Protocol::kTCP, 8081}});
    auto result = plan_one(make_service(), {first, second});
    REQUIRE(result.cluster_endpoints.size() == 2);
    CHECK(result.cluster_endpoints[0].port == 8080);
    CHECK(result.cluster_endpoints[1].port == 8081);
}

TEST_CASE("a named targetPort resolves per slice") {
    auto service = make_service();
    service.ports[0].target_port = watch::IntOrString{true, 0, "web"};
    // Two Deployments behind one Service name the container port "web" with
    // different numbers; each slice carries its pods' number.
    auto old_pods = make_slice("web-1", {{"10.244.1.5"}}, {{"http", watch::Protocol::kTCP, 8080}});
    auto new_pods = make_slice("web-2", {{"10.244.2.5"}}, {{"http", watch::Protocol::kTCP, 9090}});
    auto result = plan_one(service, {old_pods, new_pods});
    REQUIRE(result.cluster_endpoints.size() == 2);
    CHECK(result.cluster_endpoints[0].port == 8080);
    CHECK(result.cluster_endpoints[1].port == 9090);
    CHECK(result.port == 80);
}

TEST_CASE("each port of a multi-port Service takes the slice port of its name") {
    auto service = make_service();
    service.ports = {service_port("https", 443), service_port("http", 80)};
    auto slice = make_slice("web-1", {{"10.244.1.5"}},
                            {{"http", watch::Protocol::kTCP, 8080},
                             {"https", watch::Protocol::kTCP, 8443},
                             {"metrics", watch::Protocol::kTCP, 9100}});
    auto plans = plan(service, {slice});
    REQUIRE(plans.size() == 2);
    CHECK(plans[0].port_name == "http");
    CHECK(plans[0].port == 80);
    CHECK(plans[0].cluster_endpoints.at(0).port == 8080);
    CHECK(plans[1].port_name == "https");
    CHECK(plans[1].port == 443);
    CHECK(plans[1].cluster_endpoints.at(0).port == 8443);
}

TEST_CASE("a slice port must match the service port's protocol as well as its name") {
    auto service = make_service();
    service.ports = {service_port("dns", 53, watch::Protocol::kUDP)};
    auto tcp_only = make_slice("web-1", {{"10.244.1.5"}}, {{"dns", watch::Protocol::kTCP, 5353}});
    CHECK(plan_one(service, {tcp_only}).cluster_endpoints.empty());
    auto both =
        make_slice("web-2", {{"10.244.1.6"}},
                   {{"dns", watch::Protocol::kTCP, 5353}, {"dns", watch::Protocol::kUDP, 53}});
    auto result = plan_one(service, {tcp_only, both});
    REQUIRE(ips(result.cluster_endpoints) == Strings{"10.244.1.6"});
    CHECK(result.cluster_endpoints[0].port == 53);
    CHECK(result.protocol == rules::Protocol::kUDP);
}

TEST_CASE("a slice port without a number is ignored") {
    auto no_number = make_slice("web-1", {{"10.244.1.5"}}, {{"http", watch::Protocol::kTCP, {}}});
    auto numbered = make_slice("web-2", {{"10.244.1.6"}});
    auto result = plan_one(make_service(), {no_number, numbered});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.6"});
}

TEST_CASE("FQDN slices are ignored") {
    auto fqdn = std::make_shared<watch::EndpointSlice>(*make_slice("web-1", {}));
    fqdn->address_type = watch::AddressType::kFQDN;
    fqdn->endpoints = {watch::Endpoint{}};
    auto result = plan_one(make_service(), {fqdn, make_slice("web-2", {{"10.244.1.6"}})});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.6"});
}

TEST_CASE("slices of another Service, or labelled headless or for another proxy, are ignored") {
    auto other = make_slice("api-1", {{"10.244.3.1"}}, {{"http", watch::Protocol::kTCP, 8080}},
                            watch::AddressType::kIPv4, "api");
    auto headless = std::make_shared<watch::EndpointSlice>(*make_slice("web-1", {{"10.244.3.2"}}));
    headless->meta.labels[watch::kHeadlessLabel] = "";
    auto elsewhere = std::make_shared<watch::EndpointSlice>(*make_slice("web-2", {{"10.244.3.3"}}));
    elsewhere->meta.labels[watch::kServiceProxyNameLabel] = "other-proxy";
    auto result = plan_one(make_service(),
                           {other, headless, elsewhere, make_slice("web-3", {{"10.244.3.4"}})});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.3.4"});
}

TEST_CASE("a dual-stack Service takes endpoints of both families") {
    auto service = make_service();
    service.cluster_ips = {ip("10.96.0.10"), ip("fd00:10:96::a")};
    service.ip_families = {IpFamily::kV4, IpFamily::kV6};
    auto v4 = make_slice("web-v4", {{"10.244.1.5"}});
    auto v6 = make_slice("web-v6", {{"fd00:10:244:1::5"}}, {{"http", watch::Protocol::kTCP, 8080}},
                         watch::AddressType::kIPv6);
    auto result = plan_one(service, {v4, v6});
    CHECK(result.cluster_ips.size() == 2);
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5", "fd00:10:244:1::5"});
}

TEST_CASE("endpoints of a family the Service has no cluster IP of are ignored") {
    auto service = make_service();
    service.external_ips = {ip("192.0.2.10"), ip("2001:db8::10")};
    auto v4 = make_slice("web-v4", {{"10.244.1.5"}});
    auto v6 = make_slice("web-v6", {{"fd00:10:244:1::5"}}, {{"http", watch::Protocol::kTCP, 8080}},
                         watch::AddressType::kIPv6);
    auto result = plan_one(service, {v4, v6});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5"});
    CHECK(result.external_ips == std::vector<IpAddress>{ip("192.0.2.10")});

    auto v6_only = make_service();
    v6_only.cluster_ips = {ip("fd00:10:96::a")};
    v6_only.ip_families = {IpFamily::kV6};
    auto result6 = plan_one(v6_only, {v4, v6});
    CHECK(ips(result6.cluster_endpoints) == Strings{"fd00:10:244:1::5"});
}

// --- topology ---------------------------------------------------------------

TEST_CASE("zone hints keep the endpoints hinted for this node's zone") {
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}},
                                      {"10.244.1.5", "node-b", true, true, false, {"zone-b"}},
                                      {"10.244.1.6", "node-b", true, true, false, {"zone-a"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.5", "10.244.1.6"});
}

TEST_CASE("zone hints are ignored when one ready endpoint has none") {
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}},
                                      {"10.244.1.5", "node-b"}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.5", "10.244.1.5"});
}

TEST_CASE("zone hints of endpoints that are not ready do not count") {
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}},
                                      {"10.244.1.5", "node-b", true, true, false, {"zone-b"}},
                                      {"10.244.1.9", "node-b", false, false, true}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.5"});
}

TEST_CASE("zone hints are ignored when none names this node's zone") {
    auto slice = make_slice("web-1", {{"10.244.1.5", "node-b", true, true, false, {"zone-b"}},
                                      {"10.244.1.6", "node-b", true, true, false, {"zone-c"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5", "10.244.1.6"});
}

TEST_CASE("zone hints are ignored when this node has no zone or is unknown") {
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}},
                                      {"10.244.1.5", "node-b", true, true, false, {"zone-b"}}});
    watch::Node no_zone;
    no_zone.meta.name = kNode;
    CHECK(plan_one(make_service(), {slice}, &no_zone).cluster_endpoints.size() == 2);
    CHECK(plan_one(make_service(), {slice}, nullptr).cluster_endpoints.size() == 2);
}

TEST_CASE("topology never filters local endpoints") {
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-b"}},
                                      {"10.244.1.5", "node-b", true, true, false, {"zone-a"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.1.5"});
    CHECK(ips(result.local_endpoints) == Strings{"10.244.0.5"});
}

TEST_CASE("node hints keep the endpoints hinted for this node") {
    auto slice =
        make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}, {"node-a"}},
                             {"10.244.0.6", "node-b", true, true, false, {"zone-a"}, {"node-b"}},
                             {"10.244.1.5", "node-b", true, true, false, {"zone-b"}, {"node-b"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.5"});
}

TEST_CASE("node hints fall back to zone hints when one ready endpoint has no node hint") {
    auto slice =
        make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}, {"node-a"}},
                             {"10.244.0.6", "node-b", true, true, false, {"zone-a"}},
                             {"10.244.1.5", "node-b", true, true, false, {"zone-b"}, {"node-b"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.5", "10.244.0.6"});
}

TEST_CASE("node hints are ignored when none names this node") {
    auto slice = make_slice("web-1", {{"10.244.0.6", "node-b", true, true, false, {}, {"node-b"}},
                                      {"10.244.1.5", "node-c", true, true, false, {}, {"node-c"}}});
    auto result = plan_one(make_service(), {slice});
    CHECK(ips(result.cluster_endpoints) == Strings{"10.244.0.6", "10.244.1.5"});
}

// --- what is not proxied ---------------------------------------------------

TEST_CASE("headless Services are not proxied") {
    auto service = make_service();
    service.headless = true;
    service.cluster_ips.clear();
    CHECK(plan(service, {make_slice("web-1", {{"10.244.1.5"}})}).empty());
}

TEST_CASE("ExternalName Services are not proxied") {
    auto service = make_service();
    service.type = watch::ServiceType::kExternalName;
    service.external_name = "my.database.example.com";
    CHECK(plan(service, {}).empty());
}

TEST_CASE("Services labelled service.kubernetes.io/service-proxy-name are not proxied") {
    auto service = make_service();
    service.meta.labels[watch::kServiceProxyNameLabel] = "cilium";
    CHECK(plan(service, {make_slice("web-1", {{"10.244.1.5"}})}).empty());
}

TEST_CASE("Services labelled service.kubernetes.io/headless are not proxied") {
    auto service = make_service();
    service.meta.labels[watch::kHeadlessLabel] = "";
    CHECK(plan(service, {make_slice("web-1", {{"10.244.1.5"}})}).empty());
}

TEST_CASE("Services without a cluster IP are not proxied") {
    auto service = make_service();
    service.cluster_ips.clear();
    CHECK(plan(service, {make_slice("web-1", {{"10.244.1.5"}})}).empty());
}

TEST_CASE("a Service without endpoints is still proxied, with none") {
    auto result = plan_one(make_service(), {});
    CHECK(result.cluster_endpoints.empty());
    CHECK(result.local_endpoints.empty());
    CHECK(result.cluster_ips == std::vector<IpAddress>{ip("10.96.0.10")});
}

// --- identity and policies --------------------------------------------------

TEST_CASE("ClientIP affinity defaults to 10800 seconds and keeps an explicit timeout") {
    auto service = make_service();
    CHECK_FALSE(plan_one(service, {}).session_affinity.client_ip);
    service.session_affinity = watch::SessionAffinity::kClientIP;
    auto affinity = plan_one(service, {}).session_affinity;
    CHECK(affinity.client_ip);
    CHECK(affinity.timeout_seconds == 10800);
    service.affinity_timeout_seconds = 60;
    CHECK(plan_one(service, {}).session_affinity.timeout_seconds == 60);
}

TEST_CASE("identity fields are copied from the Service") {
    auto service = make_service("shop", "cart");
    service.ports = {service_port("grpc", 9000, watch::Protocol::kSCTP)};
    service.internal_traffic_policy = watch::TrafficPolicy::kLocal;
    auto result = plan_one(service, {});
    CHECK(result.ns == "shop");
    CHECK(result.service == "cart");
    CHECK(result.port_name == "grpc");
    CHECK(result.protocol == rules::Protocol::kSCTP);
    CHECK(result.port == 9000);
    CHECK(result.internal_traffic_policy == rules::TrafficPolicy::kLocal);
}

namespace {

watch::Service typed_service(watch::ServiceType type) {
    auto service = make_service();
    service.type = type;
    service.ports[0].node_port = 30080;
    service.external_traffic_policy = watch::TrafficPolicy::kLocal;
    service.health_check_node_port = 32000;
    service.load_balancer_source_ranges = {*Prefix::parse("203.0.113.0/24")};
    watch::LoadBalancerIngress vip;
    vip.ip = ip("198.51.100.7");
    watch::LoadBalancerIngress proxied;
    proxied.ip = ip("198.51.100.8");
    proxied.ip_mode_proxy = true;
    watch::LoadBalancerIngress named;
    named.hostname = "lb.example.com";
    service.load_balancer_ingress = {vip, proxied, named};
    return service;
}

}  // namespace

TEST_CASE("a ClusterIP Service has no node port, load balancer fields or external Local policy") {
    auto result = plan_one(typed_service(watch::ServiceType::kClusterIP), {});
    CHECK(result.node_port == 0);
    CHECK(result.load_balancer_ips.empty());
    CHECK(result.load_balancer_source_ranges.empty());
    CHECK(result.external_traffic_policy == rules::TrafficPolicy::kCluster);
    CHECK(result.health_check_node_port == 0);
}

TEST_CASE("a ClusterIP Service with external IPs honours externalTrafficPolicy Local") {
    auto service = typed_service(watch::ServiceType::kClusterIP);
    service.external_ips = {ip("192.0.2.10")};
    auto result = plan_one(service, {});
    CHECK(result.external_ips == std::vector<IpAddress>{ip("192.0.2.10")});
    CHECK(result.external_traffic_policy == rules::TrafficPolicy::kLocal);
    CHECK(result.health_check_node_port == 0);
}

TEST_CASE("a NodePort Service has its node port and external policy, no load balancer fields") {
    auto result = plan_one(typed_service(watch::ServiceType::kNodePort), {});
    CHECK(result.node_port == 30080);
    CHECK(result.external_traffic_policy == rules::TrafficPolicy::kLocal);
    CHECK(result.load_balancer_ips.empty());
    CHECK(result.load_balancer_source_ranges.empty());
    CHECK(result.health_check_node_port == 0);
}

TEST_CASE(
    "a LoadBalancer Service has VIP-mode ingress IPs, source ranges and a health check port") {
    auto result = plan_one(typed_service(watch::ServiceType::kLoadBalancer), {});
    CHECK(result.node_port == 30080);
    CHECK(result.load_balancer_ips == std::vector<IpAddress>{ip("198.51.100.7")});
    CHECK(result.load_balancer_source_ranges ==
          std::vector<Prefix>{*Prefix::parse("203.0.113.0/24")});
    CHECK(result.external_traffic_policy == rules::TrafficPolicy::kLocal);
    CHECK(result.health_check_node_port == 32000);
}

TEST_CASE("a LoadBalancer Service with externalTrafficPolicy Cluster has no health check port") {
    auto service = typed_service(watch::ServiceType::kLoadBalancer);
    service.external_traffic_policy = watch::TrafficPolicy::kCluster;
    auto result = plan_one(service, {});
    CHECK(result.external_traffic_policy == rules::TrafficPolicy::kCluster);
    CHECK(result.health_check_node_port == 0);
    CHECK(result.load_balancer_ips.size() == 1);
}

TEST_CASE("load balancer IPs and source ranges keep the Service's families only") {
    auto service = typed_service(watch::ServiceType::kLoadBalancer);
    watch::LoadBalancerIngress v6;
    v6.ip = ip("2001:db8::7");
    service.load_balancer_ingress.push_back(v6);
    service.load_balancer_source_ranges.push_back(*Prefix::parse("2001:db8::/32"));
    auto result = plan_one(service, {});
    CHECK(result.load_balancer_ips == std::vector<IpAddress>{ip("198.51.100.7")});
    CHECK(result.load_balancer_source_ranges.size() == 1);
}

// --- ordering and the whole snapshot -----------------------------------------

TEST_CASE("endpoints are sorted by ip then port") {
    auto first = make_slice("web-1", {{"10.244.2.1"}, {"10.244.10.1"}},
                            {{"http", watch::Protocol::kTCP, 9090}});
    auto second = make_slice("web-2", {{"10.244.2.1"}, {"10.244.1.200"}},
                             {{"http", watch::Protocol::kTCP, 8080}});
    auto result = plan_one(make_service(), {first, second});
    REQUIRE(result.cluster_endpoints.size() == 4);
    CHECK(ips(result.cluster_endpoints) ==
          Strings{"10.244.1.200", "10.244.2.1", "10.244.2.1", "10.244.10.1"});
    CHECK(result.cluster_endpoints[1].port == 8080);
    CHECK(result.cluster_endpoints[2].port == 9090);
}

namespace {

watch::Snapshot snapshot_of(std::vector<watch::Service> services, Slices slices,
                            std::vector<watch::Node> nodes) {
    watch::SnapshotBuilder snapshot;
    for (auto& service : services) snapshot.add(std::move(service));
    for (auto& slice : slices) snapshot.add(*slice);
    for (auto& node : nodes) snapshot.add(std::move(node));
    return *snapshot.build();
}

}  // namespace

TEST_CASE("a plan lists service ports by namespace, service, port name and protocol") {
    auto dns = make_service("kube-system", "kube-dns");
    dns.ports = {service_port("metrics", 9153), service_port("dns-tcp", 53),
                 service_port("dns", 53, watch::Protocol::kUDP)};
    auto web = make_service("default", "web");
    auto api = make_service("default", "api");
    api.ports = {service_port("", 443, watch::Protocol::kUDP), service_port("", 443)};
    auto result = build_plan(snapshot_of({dns, web, api}, {}, {}), PlannerOptions{kNode});
    Strings ids;
    for (const auto& service : result.services) ids.push_back(service.id());
    CHECK(ids == Strings{"default/api:/TCP", "default/api:/UDP", "default/web:http/TCP",
                         "kube-system/kube-dns:dns/UDP", "kube-system/kube-dns:dns-tcp/TCP",
                         "kube-system/kube-dns:metrics/TCP"});
    CHECK(result.node == "node-a");
}

TEST_CASE(
    "build_plan matches slices to Services by label and namespace, and uses this Node's zone") {
    auto web = make_service("default", "web");
    auto other_ns = make_service("staging", "web");
    auto slice = make_slice("web-1", {{"10.244.0.5", "node-a", true, true, false, {"zone-a"}},
                                      {"10.244.1.5", "node-b", true, true, false, {"zone-b"}}});
    auto unlabelled =
        std::make_shared<watch::EndpointSlice>(*make_slice("web-x", {{"10.244.9.9"}}));
    unlabelled->service_name.clear();
    unlabelled->meta.labels.clear();
    auto snapshot = snapshot_of({web, other_ns}, {slice, unlabelled},
                                {make_node("node-a", "zone-a"), make_node("node-b", "zone-b")});
    auto result = build_plan(snapshot, PlannerOptions{kNode});
    REQUIRE(result.services.size() == 2);
    CHECK(ips(result.services[0].cluster_endpoints) == Strings{"10.244.0.5"});
    CHECK(ips(result.services[0].local_endpoints) == Strings{"10.244.0.5"});
    CHECK(result.services[1].ns == "staging");
    CHECK(result.services[1].cluster_endpoints.empty());

    // On node-b the same snapshot keeps node-b's zone.
    auto on_b = build_plan(snapshot, PlannerOptions{"node-b"});
    CHECK(ips(on_b.services[0].cluster_endpoints) == Strings{"10.244.1.5"});
    CHECK(ips(on_b.services[0].local_endpoints) == Strings{"10.244.1.5"});
}

TEST_CASE("build_plan is deterministic") {
    auto web = make_service();
    auto slices = Slices{make_slice("web-2", {{"10.244.1.5"}, {"10.244.0.5", "node-a"}}),
                         make_slice("web-1", {{"10.244.1.5", "node-b", false, true, true}})};
    auto snapshot = snapshot_of({web}, slices, {make_node("node-a", "zone-a")});
    auto first = build_plan(snapshot, PlannerOptions{kNode});
    CHECK(first == build_plan(snapshot, PlannerOptions{kNode}));
    CHECK(first.services.at(0).cluster_endpoints.size() == 2);
}

// --- node-local DNS addresses (docs/dns.md) -----------------------------

TEST_CASE("a Service whose ClusterIP is a node-local DNS address is not proxied on this node") {
    watch::Service dns = make_service("kube-system", "kube-dns");
    dns.ports = {service_port("dns", 53, watch::Protocol::kUDP),
                 service_port("dns-tcp", 53, watch::Protocol::kTCP)};
    auto slice =
        make_slice("kube-dns-1", {{"10.244.1.5"}},
                   {{"dns", watch::Protocol::kUDP, 53}, {"dns-tcp", watch::Protocol::kTCP, 53}},
                   watch::AddressType::kIPv4, "kube-dns");
    auto in_kube_system =
        std::make_shared<watch::EndpointSlice>(*slice);  // the Service's namespace
    in_kube_system->meta.ns = "kube-system";
    const Slices slices{in_kube_system};
    REQUIRE(plan_service(dns, slices, &kNodeA, PlannerOptions{kNode}).size() == 2);
    CHECK(plan_service(dns, slices, &kNodeA,
                       PlannerOptions{kNode, {ip("169.254.20.10"), ip("10.96.0.10")}})
              .empty());
    // An address that is not the Service's changes nothing.
    CHECK(plan_service(dns, slices, &kNodeA, PlannerOptions{kNode, {ip("169.254.20.10")}}).size() ==
          2);
}

TEST_CASE("a dual-stack Service keeps the ClusterIP that is not node-local") {
    watch::Service service = make_service();
    service.cluster_ips = {ip("10.96.0.10"), ip("fd00:10:96::a")};
    service.ip_families = {IpFamily::kV4, IpFamily::kV6};
    auto v4 = make_slice("web-v4", {{"10.244.1.5"}});
    auto v6 = make_slice("web-v6", {{"fd00:10:244:1::5"}}, {{"http", watch::Protocol::kTCP, 8080}},
                         watch::AddressType::kIPv6);
    const auto plans =
        plan_service(service, {v4, v6}, &kNodeA, PlannerOptions{kNode, {ip("10.96.0.10")}});
    REQUIRE(plans.size() == 1);
    CHECK(plans[0].cluster_ips == std::vector<IpAddress>{ip("fd00:10:96::a")});
    // Endpoints of both families stay: the families follow the Service.
    CHECK(ips(plans[0].cluster_endpoints) == Strings{"10.244.1.5", "fd00:10:244:1::5"});
}
