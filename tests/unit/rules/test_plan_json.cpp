// The JSON form of a Plan: exact key names, and plan_from_json inverting
// plan_to_json.
#include <rapidjson/document.h>

#include <catch.hpp>

#include "rules/plan_json.h"

using namespace sb;
using namespace sb::rules;

namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}

Plan sample_plan() {
    Plan plan;
    plan.node = "node-a";
    ServicePortPlan lb;
    lb.ns = "default";
    lb.service = "shop";
    lb.port_name = "https";
    lb.protocol = Protocol::kTCP;
    lb.cluster_ips = {ip("10.96.12.4"), ip("fd00:10:96::c")};
    lb.port = 443;
    lb.node_port = 31443;
    lb.external_ips = {ip("192.0.2.10")};
    lb.load_balancer_ips = {ip("198.51.100.7")};
    lb.load_balancer_source_ranges = {*Prefix::parse("203.0.113.0/24")};
    lb.external_traffic_policy = TrafficPolicy::kLocal;
    lb.internal_traffic_policy = TrafficPolicy::kCluster;
    lb.health_check_node_port = 32000;
    lb.session_affinity = {true, 600};
    Endpoint local{ip("10.244.0.5"), 8443, true, true, false, true, "node-a", "zone-a"};
    Endpoint remote{ip("10.244.1.5"), 8443, false, true, true, false, "node-b", "zone-b"};
    lb.cluster_endpoints = {local, remote};
    lb.local_endpoints = {local};
    ServicePortPlan dns;
    dns.ns = "kube-system";
    dns.service = "kube-dns";
    dns.port_name = "dns";
    dns.protocol = Protocol::kUDP;
    dns.cluster_ips = {ip("10.96.0.10")};
    dns.port = 53;
    dns.internal_traffic_policy = TrafficPolicy::kLocal;
    dns.cluster_endpoints = {
        {ip("10.244.1.6"), 5353, true, true, false, false, "node-b", "zone-b"}};
    dns.other_serving_endpoints = {
        {ip("10.244.1.7"), 5353, false, true, true, false, "node-b", "zone-b"}};
    plan.services = {lb, dns};
    return plan;
}

std::vector<std::string> keys(const rapidjson::Value& object) {
    std::vector<std::string> result;
    for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
        result.emplace_back(it->name.GetString());
    }
    return result;
}

}  // namespace

TEST_CASE("plan_from_json inverts plan_to_json") {
    const Plan plan = sample_plan();
    auto json = plan_to_json(plan);
    CHECK(json.back() == '\n');
    auto parsed = plan_from_json(json);
    REQUIRE(parsed.ok());
    CHECK(*parsed == plan);
    CHECK(plan_to_json(*parsed) == json);
}

TEST_CASE("the plan document uses the documented key names and values") {
    auto json = plan_to_json(sample_plan());
    rapidjson::Document document;
    document.Parse(json.c_str());
    REQUIRE(document.IsObject());
    CHECK(keys(document) == std::vector<std::string>{"node", "services"});
    CHECK(std::string(document["node"].GetString()) == "node-a");
    const auto& lb = document["services"][0];
    CHECK(keys(lb) == std::vector<std::string>{
                          "namespace", "service", "portName", "protocol", "clusterIPs", "port",
                          "nodePort", "externalIPs", "loadBalancerIPs", "loadBalancerSourceRanges",
                          "externalTrafficPolicy", "internalTrafficPolicy", "healthCheckNodePort",
                          "sessionAffinity", "clusterEndpoints", "localEndpoints"});
    CHECK(std::string(lb["clusterIPs"][1].GetString()) == "fd00:10:96::c");
    CHECK(std::string(lb["loadBalancerSourceRanges"][0].GetString()) == "203.0.113.0/24");
    CHECK(std::string(lb["externalTrafficPolicy"].GetString()) == "Local");
    CHECK(std::string(lb["sessionAffinity"]["type"].GetString()) == "ClientIP");
    CHECK(lb["sessionAffinity"]["timeoutSeconds"].GetUint() == 600);
    const auto& endpoint = lb["clusterEndpoints"][1];
    CHECK(keys(endpoint) == std::vector<std::string>{"ip", "port", "ready", "serving",
                                                     "terminating", "nodeName", "zone"});
    CHECK(endpoint["port"].GetUint() == 8443);
    CHECK(endpoint["terminating"].GetBool());
    const auto& dns = document["services"][1];
    CHECK(std::string(dns["protocol"].GetString()) == "UDP");
    CHECK(dns["nodePort"].GetUint() == 0);
    CHECK(keys(dns["sessionAffinity"]) == std::vector<std::string>{"type"});
    CHECK(std::string(dns["sessionAffinity"]["type"].GetString()) == "None");
    CHECK(dns["localEndpoints"].IsArray());
    // Written only when there are some.
    CHECK(keys(dns).back() == "otherServingEndpoints");
    CHECK(dns["otherServingEndpoints"][0]["terminating"].GetBool());
}

TEST_CASE("plan_from_json names the field it rejects") {
    auto json = plan_to_json(sample_plan());
    auto replace = [&](const std::string& from, const std::string& to) {
        std::string changed = json;
        auto at = changed.find(from);
        REQUIRE(at != std::string::npos);
        changed.replace(at, from.size(), to);
        return plan_from_json(changed);
    };
    auto bad_port = replace("\"port\": 443", "\"port\": 70000");
    REQUIRE_FALSE(bad_port.ok());
    CHECK(bad_port.error().message.find("services[0].port") != std::string::npos);
    auto bad_ip = replace("\"10.244.1.5\"", "\"10.244.1.500\"");
    REQUIRE_FALSE(bad_ip.ok());
    CHECK(bad_ip.error().message.find("services[0].clusterEndpoints[1].ip") != std::string::npos);
    auto bad_policy = replace("\"Local\"", "\"Nearby\"");
    REQUIRE_FALSE(bad_policy.ok());
    CHECK(bad_policy.error().message.find("externalTrafficPolicy") != std::string::npos);
    auto missing = replace("\"zone\": \"zone-a\"", "\"region\": \"zone-a\"");
    REQUIRE_FALSE(missing.ok());
    CHECK(missing.error().message.find("localEndpoints") == std::string::npos);
    CHECK(missing.error().message.find("zone: missing") != std::string::npos);
    auto bad_affinity = replace("\"type\": \"ClientIP\"", "\"type\": \"Sticky\"");
    REQUIRE_FALSE(bad_affinity.ok());
    CHECK(bad_affinity.error().message.find("services[0].sessionAffinity.type") !=
          std::string::npos);
    CHECK_FALSE(plan_from_json("{\"node\": \"a\"").ok());
    auto no_services = plan_from_json("{\"node\": \"a\"}");
    REQUIRE_FALSE(no_services.ok());
    CHECK(no_services.error().message.find("services") != std::string::npos);
}
