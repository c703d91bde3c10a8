// Decoding Pods (issue 13): the fields that name a DNS client, their
// defaults, their validation and their bounds.
#include <catch.hpp>
#include <string>
#include <vector>

#include "base/timestamp.h"
#include "fixtures.h"
#include "watch/decode.h"

using namespace sb::watch;
using Catch::Matchers::Contains;

namespace {

Pod pod_of(const rapidjson::Value& value) {
    auto pod = decode_pod(value);
    INFO((pod.ok() ? "" : pod.error().message));
    REQUIRE(pod.ok());
    return *pod;
}

Pod edited_pod(std::vector<fixtures::Edit> edits) {
    return pod_of(fixtures::edited(fixtures::kPod, std::move(edits)));
}

// Why the edited fixture Pod is rejected; "" when it decodes.
std::string pod_error(std::vector<fixtures::Edit> edits) {
    auto pod = decode_pod(fixtures::edited(fixtures::kPod, std::move(edits)));
    return pod.ok() ? "" : pod.error().message;
}

// A JSON array of `count` strings made by `item(i)`.
template <typename Item>
std::string array_of(size_t count, Item item) {
    std::string out = "[";
    for (size_t i = 0; i < count; ++i) out += (i ? "," : "") + item(i);
    return out + "]";
}

std::string quoted(const std::string& text) {
    return '"' + text + '"';
}

}  // namespace

TEST_CASE("a Pod decodes the fields DNS reads, and drops its labels and annotations") {
    Pod pod = pod_of(fixtures::parse(fixtures::kPod));
    CHECK(pod.meta.key() == ObjectKey{"shop", "web-7d4b9c-abcde"});
    CHECK(pod.meta.resource_version == "5150");
    CHECK(pod.meta.labels.empty());
    CHECK(pod.meta.annotations.empty());
    CHECK(pod.created == *sb::parse_rfc3339("2024-05-02T10:11:12Z"));
    CHECK(pod.node_name == "node-1");
    CHECK_FALSE(pod.host_network);
    CHECK(pod.dns_policy == DnsPolicy::kClusterFirst);
    CHECK_FALSE(pod.dns_config.has_value());
    CHECK(pod.phase == PodPhase::kRunning);
    CHECK(pod.pod_ips == std::vector<sb::IpAddress>{*sb::IpAddress::parse("10.244.1.7"),
                                                    *sb::IpAddress::parse("fd00:10:244:1::7")});
}

TEST_CASE("a Pod with only its name gets the API defaults") {
    Pod pod = pod_of(fixtures::parse(R"({"metadata":{"name":"lone"}})"));
    CHECK(pod.meta.key() == ObjectKey{"default", "lone"});
    CHECK(pod.created == std::chrono::system_clock::time_point{});
    CHECK(pod.node_name.empty());
    CHECK(pod.dns_policy == DnsPolicy::kClusterFirst);
    CHECK(pod.phase == PodPhase::kPending);
    CHECK(pod.pod_ips.empty());
}

TEST_CASE("every dnsPolicy, and ClusterFirst when absent") {
    const std::vector<std::pair<const char*, DnsPolicy>> policies = {
        {R"("ClusterFirst")", DnsPolicy::kClusterFirst},
        {R"("ClusterFirstWithHostNet")", DnsPolicy::kClusterFirstWithHostNet},
        {R"("Default")", DnsPolicy::kDefault},
        {R"("None")", DnsPolicy::kNone},
        {"null", DnsPolicy::kClusterFirst},
        {R"("")", DnsPolicy::kClusterFirst},
    };
    for (const auto& [json, policy] : policies) {
        INFO(json);
        CHECK(edited_pod({{"/spec/dnsPolicy", json}}).dns_policy == policy);
    }
    CHECK(edited_pod({{"/spec/dnsPolicy", nullptr}}).dns_policy == DnsPolicy::kClusterFirst);
}

TEST_CASE("an unknown dnsPolicy rejects the Pod, naming it and the field") {
    CHECK(pod_error({{"/spec/dnsPolicy", R"("clusterfirst")"}}) ==
          "Pod shop/web-7d4b9c-abcde: spec.dnsPolicy: unknown DNS policy \"clusterfirst\" (want "
          "ClusterFirst, ClusterFirstWithHostNet, Default or None)");
    CHECK(pod_error({{"/spec/dnsPolicy", "1"}}) ==
          "Pod shop/web-7d4b9c-abcde: spec.dnsPolicy: expected a string, got number");
}

TEST_CASE("hostNetwork, phases and node names") {
    Pod host = edited_pod(
        {{"/spec/hostNetwork", "true"}, {"/spec/dnsPolicy", R"("ClusterFirstWithHostNet")"}});
    CHECK(host.host_network);
    CHECK(host.dns_policy == DnsPolicy::kClusterFirstWithHostNet);
    const std::vector<std::pair<const char*, PodPhase>> phases = {
        {R"("Pending")", PodPhase::kPending},     {R"("Running")", PodPhase::kRunning},
        {R"("Succeeded")", PodPhase::kSucceeded}, {R"("Failed")", PodPhase::kFailed},
        {R"("Unknown")", PodPhase::kUnknown},
    };
    for (const auto& [json, phase] : phases) {
        INFO(json);
        CHECK(edited_pod({{"/status/phase", json}}).phase == phase);
    }
    CHECK_THAT(pod_error({{"/status/phase", R"("Evicted")"}}),
               Contains("status.phase: unknown phase \"Evicted\""));
    CHECK_THAT(pod_error({{"/spec/hostNetwork", R"("yes")"}}),
               Contains("spec.hostNetwork: expected a boolean, got string"));
    CHECK_THAT(pod_error({{"/spec/nodeName", R"("Node_1")"}}),
               Contains("spec.nodeName: invalid nodeName \"Node_1\""));
    CHECK_THAT(pod_error({{"/metadata/creationTimestamp", R"("yesterday")"}}),
               Contains("metadata.creationTimestamp: invalid time \"yesterday\""));
    CHECK_THAT(pod_error({{"/metadata/name", R"("Web")"}}),
               Contains("metadata.name: invalid name \"Web\""));
}

TEST_CASE("dnsConfig: nameservers as text, searches and options with and without values") {
    Pod pod = edited_pod({{"/spec/dnsPolicy", R"("None")"}, {"/spec/dnsConfig", R"({
        "nameservers": ["10.96.0.10", "fd00:10:96::a"],
        "searches": ["shop.svc.cluster.local", "svc.cluster.local", "example.com."],
        "options": [{"name": "ndots", "value": "2"}, {"name": "rotate"},
                    {"name": "timeout", "value": ""}]})"}});
    REQUIRE(pod.dns_config.has_value());
    CHECK(pod.dns_config->nameservers == std::vector<std::string>{"10.96.0.10", "fd00:10:96::a"});
    CHECK(pod.dns_config->searches ==
          std::vector<std::string>{"shop.svc.cluster.local", "svc.cluster.local", "example.com."});
    CHECK(pod.dns_config->options ==
          std::vector<PodDnsOption>{{"ndots", "2"}, {"rotate", std::nullopt}, {"timeout", ""}});

    // Present but empty is not absent: a ClusterFirst Pod may add options only.
    Pod empty = edited_pod({{"/spec/dnsConfig", "{}"}});
    REQUIRE(empty.dns_config.has_value());
    CHECK(*empty.dns_config == PodDnsConfig{});
    CHECK_FALSE(edited_pod({{"/spec/dnsConfig", "null"}}).dns_config.has_value());
}

TEST_CASE("bad dnsConfig entries reject the Pod") {
    CHECK(pod_error({{"/spec/dnsConfig", R"({"nameservers": ["10.96.0.300"]})"}}) ==
          "Pod shop/web-7d4b9c-abcde: spec.dnsConfig.nameservers[0]: invalid IP address "
          "\"10.96.0.300\"");
    // Strict form: no leading zeros, no spaces, no zone.
    for (const char* bad : {R"("010.96.0.10")", R"(" 10.96.0.10")", R"("fe80::1%eth0")", "53"}) {
        INFO(bad);
        CHECK_THAT(
            pod_error({{"/spec/dnsConfig/nameservers", (std::string("[") + bad + "]").c_str()}}),
            Contains("spec.dnsConfig.nameservers[0]: "));
    }
    CHECK_THAT(pod_error({{"/spec/dnsConfig", R"({"searches": ["ok.example", "Bad_Name"]})"}}),
               Contains("spec.dnsConfig.searches[1]: invalid search domain \"Bad_Name\""));
    CHECK_THAT(pod_error({{"/spec/dnsConfig", R"({"searches": ["."]})"}}),
               Contains("spec.dnsConfig.searches[0]: invalid search domain"));
    CHECK_THAT(pod_error({{"/spec/dnsConfig", R"({"options": [{"value": "2"}]})"}}),
               Contains("spec.dnsConfig.options[0].name: required field is missing"));
    CHECK_THAT(pod_error({{"/spec/dnsConfig", R"({"options": [{"name": "ndots", "value": 2}]})"}}),
               Contains("spec.dnsConfig.options[0].value: expected a string, got number"));
    CHECK_THAT(pod_error({{"/spec/dnsConfig", R"({"options": ["ndots:2"]})"}}),
               Contains("spec.dnsConfig.options[0]: expected an object, got string"));
}

TEST_CASE("dnsConfig lists and texts are bounded as the API server bounds them") {
    auto nameserver = [](size_t i) { return quoted("10.96.0." + std::to_string(i + 1)); };
    CHECK(edited_pod({{"/spec/dnsConfig/nameservers", array_of(3, nameserver).c_str()}})
              .dns_config->nameservers.size() == 3);
    CHECK_THAT(pod_error({{"/spec/dnsConfig/nameservers", array_of(4, nameserver).c_str()}}),
               Contains("spec.dnsConfig.nameservers: too many items: 4 (at most 3)"));

    auto search = [](size_t i) { return quoted("s" + std::to_string(i) + ".example"); };
    CHECK(edited_pod({{"/spec/dnsConfig/searches", array_of(32, search).c_str()}})
              .dns_config->searches.size() == 32);
    CHECK_THAT(pod_error({{"/spec/dnsConfig/searches", array_of(33, search).c_str()}}),
               Contains("spec.dnsConfig.searches: too many items: 33 (at most 32)"));
    // 9 names of 253 characters and their spaces make 2285 > 2048.
    const std::string label(63, 'a');
    const std::string long_name = label + "." + label + "." + label + "." + std::string(61, 'b');
    REQUIRE(long_name.size() == 253);
    auto long_search = [&](size_t) { return quoted(long_name); };
    CHECK(edited_pod({{"/spec/dnsConfig/searches", array_of(8, long_search).c_str()}})
              .dns_config->searches.size() == 8);
    CHECK_THAT(pod_error({{"/spec/dnsConfig/searches", array_of(9, long_search).c_str()}}),
               Contains("spec.dnsConfig.searches: search list longer than 2048 characters"));

    auto option = [](size_t i) { return R"({"name":"o)" + std::to_string(i) + R"("})"; };
    CHECK(edited_pod({{"/spec/dnsConfig/options", array_of(32, option).c_str()}})
              .dns_config->options.size() == 32);
    CHECK_THAT(pod_error({{"/spec/dnsConfig/options", array_of(33, option).c_str()}}),
               Contains("spec.dnsConfig.options: too many items: 33 (at most 32)"));
    const std::string text(257, 'x');
    CHECK_THAT(
        pod_error({{"/spec/dnsConfig/options", (R"([{"name":")" + text + R"("}])").c_str()}}),
        Contains("spec.dnsConfig.options[0].name: longer than 256 characters"));
    CHECK_THAT(pod_error({{"/spec/dnsConfig/options",
                           (R"([{"name":"ndots","value":")" + text + R"("}])").c_str()}}),
               Contains("spec.dnsConfig.options[0].value: longer than 256 characters"));
}

TEST_CASE("status.podIP stands in for an absent or empty podIPs") {
    CHECK(edited_pod({{"/status/podIPs", nullptr}}).pod_ips ==
          std::vector<sb::IpAddress>{*sb::IpAddress::parse("10.244.1.7")});
    CHECK(edited_pod({{"/status/podIPs", "[]"}}).pod_ips ==
          std::vector<sb::IpAddress>{*sb::IpAddress::parse("10.244.1.7")});
    // podIPs wins over podIP when both are set.
    CHECK(edited_pod({{"/status/podIP", R"("10.244.1.99")"}}).pod_ips.size() == 2);
    CHECK(edited_pod({{"/status/podIPs", nullptr}, {"/status/podIP", nullptr}}).pod_ips.empty());
    CHECK(edited_pod({{"/status/podIPs", nullptr}, {"/status/podIP", R"("")"}}).pod_ips.empty());
}

TEST_CASE("bad or too many Pod IPs reject the Pod") {
    CHECK(pod_error({{"/status/podIPs/1/ip", R"("fd00::zz")"}}) ==
          "Pod shop/web-7d4b9c-abcde: status.podIPs[1].ip: invalid IP address \"fd00::zz\"");
    CHECK_THAT(pod_error({{"/status/podIPs", nullptr}, {"/status/podIP", R"("10.244.1")"}}),
               Contains("status.podIP: invalid IP address \"10.244.1\""));
    CHECK_THAT(pod_error({{"/status/podIPs/1", "{}"}}),
               Contains("status.podIPs[1].ip: required field is missing"));
    CHECK_THAT(pod_error({{"/status/podIPs/1/ip", R"("10.244.1.8")"}}),
               Contains("status.podIPs[1].ip: a second IPv4 address \"10.244.1.8\""));
    CHECK_THAT(pod_error({{"/status/podIPs",
                           R"([{"ip":"10.0.0.1"},{"ip":"fd00::1"},{"ip":"10.0.0.2"}])"}}),
               Contains("status.podIPs: too many items: 3 (at most 2)"));
}

TEST_CASE("a Pod watch event: ADDED decodes, a bad MODIFIED or DELETED still names its key") {
    const std::string pod = fixtures::kPod;
    auto added = decode_watch_event(R"({"type":"ADDED","object":)" + pod + "}");
    REQUIRE(added.ok());
    REQUIRE(std::holds_alternative<Pod>(added->object));
    CHECK(std::get<Pod>(added->object).pod_ips.size() == 2);
    CHECK(added->resource_version == "5150");
    CHECK(added->rejected.empty());

    const std::string bad =
        fixtures::to_json(fixtures::edited(fixtures::kPod, {{"/spec/dnsPolicy", R"("Cluster")"}}));
    auto modified = decode_watch_event(R"({"type":"MODIFIED","object":)" + bad + "}");
    REQUIRE(modified.ok());
    REQUIRE(std::holds_alternative<Pod>(modified->object));
    CHECK(std::get<Pod>(modified->object).meta.key() == ObjectKey{"shop", "web-7d4b9c-abcde"});
    CHECK_THAT(modified->rejected, Contains("spec.dnsPolicy"));

    auto deleted = decode_watch_event(R"({"type":"DELETED","object":)" + bad + "}");
    REQUIRE(deleted.ok());
    CHECK(std::get<Pod>(deleted->object).meta.key() == ObjectKey{"shop", "web-7d4b9c-abcde"});
    CHECK(deleted->rejected.empty());
}
