// Decoding valid objects, API defaults, documents and watch events.
#include <catch.hpp>

#include "base/timestamp.h"
#include "tests/unit/watch/decode/fixtures.h"
#include "watch/decode.h"
#include "watch/decode/syntax.h"

using namespace sb;
using namespace sb::watch;
using fixtures::Edit;

namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}

Service service_of(const rapidjson::Value& value) {
    auto result = decode_service(value);
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result.ok());
    return *result;
}

EndpointSlice slice_of(const rapidjson::Value& value) {
    auto result = decode_endpoint_slice(value);
    INFO((result ? std::string() : result.error().message));
    REQUIRE(result.ok());
    return *result;
}

std::string wrap_list(const std::string& kind, const std::vector<std::string>& items) {
    std::string out = R"({"apiVersion":"v1","kind":")" + kind +
                      R"(","metadata":{"resourceVersion":"4242"},"items":[)";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]}";
}

}  // namespace

TEST_CASE("a ClusterIP Service decodes every field") {
    Service s = service_of(fixtures::parse(fixtures::kService));
    CHECK(s.meta.ns == "default");
    CHECK(s.meta.name == "web");
    CHECK(s.meta.resource_version == "123456");
    CHECK(s.meta.labels.at("tier") == "frontend");
    CHECK(s.meta.annotations.empty());  // kubectl's last-applied copy is dropped
    CHECK(s.type == ServiceType::kClusterIP);
    CHECK_FALSE(s.headless);
    CHECK(s.cluster_ips == std::vector<IpAddress>{ip("10.96.12.34")});
    CHECK(s.ip_families == std::vector<IpFamily>{IpFamily::kV4});
    REQUIRE(s.ports.size() == 2);
    CHECK(s.ports[0].name == "http");
    CHECK(s.ports[0].protocol == Protocol::kTCP);
    CHECK(s.ports[0].port == 80);
    CHECK(s.ports[0].target_port == IntOrString{true, 0, "http"});
    CHECK(s.ports[1].target_port == IntOrString{false, 9091, ""});
    CHECK(s.ports[1].node_port == 0);
    CHECK(s.has_selector);
    CHECK(s.session_affinity == SessionAffinity::kNone);
    CHECK(s.load_balancer_ingress.empty());
}

TEST_CASE("a dual-stack LoadBalancer Service decodes policies, ranges and ingress") {
    Service s = service_of(fixtures::parse(fixtures::kLoadBalancer));
    CHECK(s.type == ServiceType::kLoadBalancer);
    CHECK(s.cluster_ips == std::vector<IpAddress>{ip("10.96.0.50"), ip("fd00:10:96::50")});
    CHECK(s.ip_families == std::vector<IpFamily>{IpFamily::kV4, IpFamily::kV6});
    CHECK(s.external_ips == std::vector<IpAddress>{ip("192.0.2.10")});
    CHECK(s.external_traffic_policy == TrafficPolicy::kLocal);
    CHECK(s.internal_traffic_policy == TrafficPolicy::kLocal);
    CHECK(s.health_check_node_port == 32001);
    REQUIRE(s.ports.size() == 2);
    CHECK(s.ports[1].protocol == Protocol::kUDP);
    CHECK(s.ports[1].node_port == 30443);
    CHECK(s.publish_not_ready_addresses);
    CHECK(s.session_affinity == SessionAffinity::kClientIP);
    CHECK(s.affinity_timeout_seconds == 600);
    CHECK(s.traffic_distribution == "PreferClose");
    // Whitespace trimmed and host bits cleared, as kube-proxy does.
    REQUIRE(s.load_balancer_source_ranges.size() == 2);
    CHECK(s.load_balancer_source_ranges[0].to_string() == "203.0.113.0/24");
    CHECK(s.load_balancer_source_ranges[1].to_string() == "2001:db8::/32");
    REQUIRE(s.load_balancer_ingress.size() == 2);
    CHECK(s.load_balancer_ingress[0].ip == ip("198.51.100.20"));
    CHECK(s.load_balancer_ingress[0].ip_mode_proxy);
    CHECK_FALSE(s.load_balancer_ingress[1].ip.has_value());
    CHECK(s.load_balancer_ingress[1].hostname == "lb-1234.elb.example.com");
    CHECK_FALSE(s.load_balancer_ingress[1].ip_mode_proxy);
}

TEST_CASE("NodePort, headless and ExternalName Services") {
    Service node_port = service_of(
        fixtures::edited(fixtures::kService, {{"/spec/type", R"("NodePort")"},
                                              {"/spec/ports/0/nodePort", "30080"},
                                              {"/spec/externalTrafficPolicy", R"("Global")"}}));
    CHECK(node_port.type == ServiceType::kNodePort);
    CHECK(node_port.ports[0].node_port == 30080);
    CHECK(node_port.external_traffic_policy == TrafficPolicy::kCluster);

    Service headless =
        service_of(fixtures::edited(fixtures::kService, {{"/spec/clusterIP", R"("None")"},
                                                         {"/spec/clusterIPs", R"(["None"])"}}));
    CHECK(headless.headless);
    CHECK(headless.cluster_ips.empty());
    CHECK(headless.ip_families == std::vector<IpFamily>{IpFamily::kV4});

    Service external = service_of(
        fixtures::edited(fixtures::kService, {{"/spec/type", R"("ExternalName")"},
                                              {"/spec/externalName", R"("db.example.com.")"},
                                              {"/spec/clusterIP", nullptr},
                                              {"/spec/clusterIPs", nullptr},
                                              {"/spec/ipFamilies", nullptr},
                                              {"/spec/selector", nullptr}}));
    CHECK(external.type == ServiceType::kExternalName);
    CHECK(external.external_name == "db.example.com");  // trailing dot dropped
    CHECK(external.cluster_ips.empty());
    CHECK_FALSE(external.has_selector);
}

TEST_CASE("absent Service fields take the API defaults") {
    auto doc = fixtures::parse(R"({"metadata":{"name":"dns"},"spec":{
        "clusterIP":"10.96.0.10","ports":[{"port":53}],"selector":{}}})");
    Service s = service_of(doc);
    CHECK(s.meta.ns == "default");  // as kubectl applies it
    CHECK(s.type == ServiceType::kClusterIP);
    CHECK(s.cluster_ips == std::vector<IpAddress>{ip("10.96.0.10")});
    CHECK(s.ip_families == std::vector<IpFamily>{IpFamily::kV4});  // from the cluster IP
    REQUIRE(s.ports.size() == 1);
    CHECK(s.ports[0].name.empty());
    CHECK(s.ports[0].protocol == Protocol::kTCP);
    CHECK(s.ports[0].target_port == IntOrString{false, 53, ""});  // defaults to port
    CHECK_FALSE(s.has_selector);  // an empty selector is no selector
    CHECK(s.external_traffic_policy == TrafficPolicy::kCluster);
    CHECK(s.internal_traffic_policy == TrafficPolicy::kCluster);
    CHECK(s.session_affinity == SessionAffinity::kNone);
    CHECK(s.affinity_timeout_seconds == kDefaultAffinityTimeoutSeconds);

    Service client_ip =
        service_of(fixtures::edited(fixtures::kService, {{"/spec/sessionAffinity", R"("ClientIP")"},
                                                         {"/spec/ports/1/targetPort", "0"},
                                                         {"/spec/type", "null"}}));
    CHECK(client_ip.session_affinity == SessionAffinity::kClientIP);
    CHECK(client_ip.affinity_timeout_seconds == 10800);
    CHECK(client_ip.ports[1].target_port == IntOrString{false, 9090, ""});  // 0 means port
    CHECK(client_ip.type == ServiceType::kClusterIP);                       // null means absent
}

TEST_CASE("an EndpointSlice decodes conditions, hints, targetRef and ports") {
    EndpointSlice slice = slice_of(fixtures::parse(fixtures::kSlice));
    CHECK(slice.meta.key() == ObjectKey{"default", "web-abc12"});
    CHECK(slice.service_name == "web");
    CHECK(slice.meta.annotations.at("endpoints.kubernetes.io/last-change-trigger-time") ==
          "2024-05-02T10:11:13Z");
    CHECK(slice.address_type == AddressType::kIPv4);
    REQUIRE(slice.endpoints.size() == 2);
    const Endpoint& first = slice.endpoints[0];
    CHECK(first.addresses == AddressList{ip("10.244.1.5")});
    CHECK(first.ready);
    CHECK(first.serving);
    CHECK_FALSE(first.terminating);
    CHECK(first.node_name == "node-1");
    CHECK(first.zone == "zone-a");
    REQUIRE(first.hints != nullptr);
    CHECK(first.hints->for_zones == std::vector<std::string>{"zone-a"});
    REQUIRE(first.target_ref.has_value());
    CHECK(*first.target_ref == ObjectReference{"Pod", "default", "web-7d4b9c-abcde"});
    const Endpoint& second = slice.endpoints[1];
    CHECK_FALSE(second.ready);
    CHECK(second.serving);
    CHECK(second.terminating);
    CHECK(second.hostname == "web-1");
    REQUIRE(slice.ports.size() == 2);
    CHECK(slice.ports[0] == EndpointPort{"http", Protocol::kTCP, 8080});
}

TEST_CASE("absent endpoint conditions and ports take kube-proxy's reading") {
    EndpointSlice slice = slice_of(fixtures::parse(R"({
        "kind":"EndpointSlice","addressType":"IPv6",
        "metadata":{"name":"dns-x1","namespace":"kube-system"},
        "endpoints":[{"addresses":["fd00::5"]},
                     {"addresses":["fd00::6"],"conditions":{"ready":false}},
                     {"addresses":["fd00::7"],"conditions":{"terminating":true,"serving":null}}],
        "ports":[{"port":null},{"name":"dns","protocol":"UDP","port":53}]})"));
    CHECK(slice.service_name.empty());  // no label: no Service
    REQUIRE(slice.endpoints.size() == 3);
    CHECK(slice.endpoints[0].ready);
    CHECK(slice.endpoints[0].serving);
    CHECK_FALSE(slice.endpoints[0].terminating);
    CHECK_FALSE(slice.endpoints[1].ready);
    CHECK(slice.endpoints[1].serving);  // absent serving: true
    CHECK_FALSE(slice.endpoints[1].terminating);
    CHECK(slice.endpoints[2].ready);
    CHECK(slice.endpoints[2].serving);
    CHECK(slice.endpoints[2].terminating);
    REQUIRE(slice.ports.size() == 2);
    CHECK(slice.ports[0].name.empty());
    CHECK_FALSE(slice.ports[0].port.has_value());  // nil port: "all ports"
    CHECK(slice.ports[0].protocol == Protocol::kTCP);
    CHECK(slice.ports[1].port == std::optional<uint16_t>(53));
}

TEST_CASE("an FQDN EndpointSlice is validated, its names dropped, its hints kept") {
    EndpointSlice slice = slice_of(fixtures::parse(R"({
        "addressType":"FQDN","metadata":{"name":"ext-1","namespace":"default",
          "labels":{"kubernetes.io/service-name":"ext"}},
        "endpoints":[{"addresses":["db.example.com"],"hints":{"forNodes":[{"name":"node-1"}]}}]})"));
    CHECK(slice.address_type == AddressType::kFQDN);
    CHECK(slice.endpoints[0].addresses.empty());
    REQUIRE(slice.endpoints[0].hints != nullptr);
    CHECK(slice.endpoints[0].hints->for_nodes == std::vector<std::string>{"node-1"});
}

TEST_CASE("a Node decodes labels and addresses") {
    auto node = decode_node(fixtures::parse(fixtures::kNode));
    REQUIRE(node.ok());
    CHECK(node->meta.key() == ObjectKey{"", "node-1"});
    CHECK(node->zone() == "zone-a");
    REQUIRE(node->addresses.size() == 2);
    CHECK(node->addresses[0] == NodeAddress{"InternalIP", "192.168.49.2"});
    CHECK(node->addresses[1] == NodeAddress{"Hostname", "node-1"});
}

TEST_CASE("a Node decodes its deletion, taints and pod CIDRs") {
    auto plain = decode_node(fixtures::parse(fixtures::kNode));
    REQUIRE(plain.ok());
    CHECK_FALSE(plain->being_deleted);
    CHECK(plain->taints.empty());
    CHECK(plain->pod_cidrs == std::vector<sb::Prefix>{*sb::Prefix::parse("10.244.1.0/24")});

    auto node = decode_node(fixtures::edited(
        fixtures::kNode,
        {{"/metadata/deletionTimestamp", R"("2024-05-01T12:00:00Z")"},
         {"/spec/taints", R"([{"key": "ToBeDeletedByClusterAutoscaler", "value": "1714564800",
                               "effect": "NoSchedule"},
                              {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
                               "timeAdded": "2024-05-01T12:00:00Z"}])"},
         {"/spec/podCIDRs", R"(["10.244.1.0/24", "fd00:10:244:1::/64"])"}}));
    REQUIRE(node.ok());
    CHECK(node->being_deleted);
    CHECK(node->taints ==
          std::vector<Taint>{{"ToBeDeletedByClusterAutoscaler", "1714564800", "NoSchedule"},
                             {"node.kubernetes.io/unreachable", "", "NoExecute"}});
    CHECK(node->pod_cidrs == std::vector<sb::Prefix>{*sb::Prefix::parse("10.244.1.0/24"),
                                                     *sb::Prefix::parse("fd00:10:244:1::/64")});

    // spec.podCIDR alone (clusters before dual-stack), host bits cleared as
    // Kubernetes' ParseCIDRSloppy reads them; a null deletionTimestamp is absent.
    auto single =
        decode_node(fixtures::edited(fixtures::kNode, {{"/spec/podCIDRs", nullptr},
                                                       {"/spec/podCIDR", R"("10.244.7.1/24")"},
                                                       {"/metadata/deletionTimestamp", "null"}}));
    REQUIRE(single.ok());
    CHECK_FALSE(single->being_deleted);
    CHECK(single->pod_cidrs == std::vector<sb::Prefix>{*sb::Prefix::parse("10.244.7.0/24")});
    auto none = decode_node(fixtures::edited(fixtures::kNode, {{"/spec", nullptr}}));
    REQUIRE(none.ok());
    CHECK(none->pod_cidrs.empty());
}

TEST_CASE("decode_object dispatches on kind") {
    auto service = decode_object(fixtures::parse(fixtures::kService));
    REQUIRE(service.ok());
    CHECK(std::holds_alternative<Service>(*service));
    auto slice = decode_object(fixtures::parse(fixtures::kSlice));
    REQUIRE(slice.ok());
    CHECK(std::holds_alternative<EndpointSlice>(*slice));
    auto node = decode_object(fixtures::parse(fixtures::kNode));
    REQUIRE(node.ok());
    CHECK(std::holds_alternative<Node>(*node));
    auto pod = decode_object(fixtures::parse(fixtures::kPod));
    REQUIRE(pod.ok());
    CHECK(std::holds_alternative<Pod>(*pod));
    auto config_map =
        decode_object(fixtures::parse(R"({"kind":"ConfigMap","metadata":{"name":"c"}})"));
    REQUIRE_FALSE(config_map.ok());
    CHECK(config_map.error().message ==
          "c: kind: unsupported kind \"ConfigMap\" (want Service, EndpointSlice, Node, Pod or "
          "ServiceCIDR)");
}

TEST_CASE("a kubectl List mixes kinds, ignores others and skips bad items") {
    const std::string bad_service = fixtures::to_json(fixtures::edited(
        fixtures::kService, {{"/metadata/name", R"("api")"}, {"/spec/ports/0/port", "0"}}));
    const std::string json = wrap_list(
        "List",
        {fixtures::kService, R"({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}})",
         bad_service, fixtures::kSlice, fixtures::kNode, fixtures::kLoadBalancer, fixtures::kPod});
    auto document = decode_document(json);
    REQUIRE(document.ok());
    CHECK(document->resource_version == "4242");
    REQUIRE(document->objects.services.size() == 2);
    CHECK(document->objects.services[0].meta.name == "web");
    CHECK(document->objects.services[1].meta.name == "shop");
    CHECK(document->objects.endpoint_slices.size() == 1);
    CHECK(document->objects.nodes.size() == 1);
    REQUIRE(document->objects.pods.size() == 1);
    CHECK(document->objects.pods[0].meta.name == "web-7d4b9c-abcde");
    REQUIRE(document->errors.size() == 1);
    CHECK(document->errors[0].describe() ==
          "Service default/api: spec.ports[0].port: port 0 out of range 1-65535");
}

TEST_CASE("typed lists from the API server carry no item kind") {
    auto item = fixtures::edited(fixtures::kSlice, {{"/kind", nullptr}, {"/apiVersion", nullptr}});
    auto document = decode_document(wrap_list("EndpointSliceList", {fixtures::to_json(item)}));
    REQUIRE(document.ok());
    CHECK(document->objects.endpoint_slices.size() == 1);
    CHECK(document->errors.empty());

    auto services = decode_document(
        R"({"kind":"ServiceList","metadata":{"resourceVersion":"9","continue":"abc"},"items":null})");
    REQUIRE(services.ok());
    CHECK(services->continue_token == "abc");
    CHECK(services->objects.services.empty());

    auto pods = decode_document(wrap_list("PodList", {R"({"metadata":{"name":"x"}})"}));
    REQUIRE(pods.ok());
    CHECK(pods->errors.empty());
    REQUIRE(pods->objects.pods.size() == 1);
    CHECK(pods->objects.pods[0].meta.key() == ObjectKey{"default", "x"});

    auto config_maps =
        decode_document(wrap_list("ConfigMapList", {R"({"metadata":{"name":"x"}})"}));
    REQUIRE(config_maps.ok());
    CHECK(config_maps->errors.empty());
    CHECK(config_maps->objects.services.empty());
    CHECK(config_maps->objects.pods.empty());
}

TEST_CASE("a single object document and an ignored kind") {
    auto one = decode_document(fixtures::kNode);
    REQUIRE(one.ok());
    CHECK(one->objects.nodes.size() == 1);
    auto config_map = decode_document(R"({"kind":"ConfigMap","metadata":{"name":"c"}})");
    REQUIRE(config_map.ok());
    CHECK(config_map->errors.empty());
    CHECK(config_map->objects.nodes.empty());
}

TEST_CASE("watch events: ADDED, MODIFIED, DELETED") {
    auto added = decode_watch_event(std::string(R"({"type":"ADDED","object":)") +
                                    fixtures::kService + "}\n");
    REQUIRE(added.ok());
    CHECK(added->type == WatchEvent::Type::kAdded);
    CHECK(std::get<Service>(added->object).meta.name == "web");
    CHECK(added->resource_version == "123456");

    auto modified =
        decode_watch_event(std::string(R"({"type":"MODIFIED","object":)") + fixtures::kSlice + "}");
    REQUIRE(modified.ok());
    CHECK(modified->type == WatchEvent::Type::kModified);
    CHECK(std::get<EndpointSlice>(modified->object).service_name == "web");

    auto deleted =
        decode_watch_event(std::string(R"({"type":"DELETED","object":)") + fixtures::kNode + "}");
    REQUIRE(deleted.ok());
    CHECK(deleted->type == WatchEvent::Type::kDeleted);
    CHECK(std::get<Node>(deleted->object).meta.name == "node-1");
}

TEST_CASE("DELETED and MODIFIED events with an invalid object still name it") {
    auto body = fixtures::edited(fixtures::kSlice, {{"/endpoints/0/addresses/0", R"("bogus")"}});
    auto deleted =
        decode_watch_event(R"({"type":"DELETED","object":)" + fixtures::to_json(body) + "}");
    REQUIRE(deleted.ok());
    const auto& slice = std::get<EndpointSlice>(deleted->object);
    CHECK(slice.meta.key() == ObjectKey{"default", "web-abc12"});
    CHECK(slice.service_name == "web");
    CHECK(deleted->resource_version == "123460");

    // The same body in a MODIFIED event names the object too, marked as
    // rejected: the reflector drops it, as a relist would.
    auto modified =
        decode_watch_event(R"({"type":"MODIFIED","object":)" + fixtures::to_json(body) + "}");
    REQUIRE(modified.ok());
    CHECK(std::get<EndpointSlice>(modified->object).meta.key() ==
          ObjectKey{"default", "web-abc12"});
    CHECK(modified->rejected ==
          "EndpointSlice default/web-abc12: endpoints[0].addresses[0]: invalid IP address "
          "\"bogus\"");
    CHECK(deleted->rejected.empty());
}

TEST_CASE("endpoint addresses the API server refuses are refused (CVE-2021-25737)") {
    auto decoded = [](const char* type, const char* address) {
        // Both endpoints get the address: the fixture's second one is IPv4.
        auto body = fixtures::edited(fixtures::kSlice, {{"/addressType", type},
                                                        {"/endpoints/0/addresses/0", address},
                                                        {"/endpoints/1/addresses/0", address}});
        return decode_endpoint_slice(body);
    };
    const std::string where = "EndpointSlice default/web-abc12: endpoints[0].addresses[0]: ";
    struct Case {
        const char* type;
        const char* address;
        const char* why;
    };
    const Case refused[] = {
        {R"("IPv4")", R"("127.0.0.1")", "may not be in the loopback range (127.0.0.0/8, ::1/128)"},
        {R"("IPv4")", R"("127.9.9.9")", "may not be in the loopback range (127.0.0.0/8, ::1/128)"},
        {R"("IPv4")", R"("169.254.169.254")",
         "may not be in the link-local range (169.254.0.0/16, fe80::/10)"},
        {R"("IPv4")", R"("0.0.0.0")", "may not be unspecified (0.0.0.0, ::)"},
        {R"("IPv4")", R"("224.0.0.251")",
         "may not be in the link-local multicast range (224.0.0.0/24, ff02::/16)"},
        {R"("IPv6")", R"("::1")", "may not be in the loopback range (127.0.0.0/8, ::1/128)"},
        {R"("IPv6")", R"("::")", "may not be unspecified (0.0.0.0, ::)"},
        {R"("IPv6")", R"("fe80::1")",
         "may not be in the link-local range (169.254.0.0/16, fe80::/10)"},
        {R"("IPv6")", R"("ff02::fb")",
         "may not be in the link-local multicast range (224.0.0.0/24, ff02::/16)"},
        {R"("IPv6")", R"("::ffff:127.0.0.1")",
         "may not be in the loopback range (127.0.0.0/8, ::1/128)"},
    };
    for (const auto& c : refused) {
        auto event = decoded(c.type, c.address);
        INFO(c.address);
        REQUIRE_FALSE(event.ok());
        CHECK(event.error().message == where + "address " + c.address + " " + c.why);
    }
    // Ordinary addresses, other multicast and unique-local IPv6 pass.
    for (const auto& [type, address] :
         {std::pair{R"("IPv4")", R"("10.0.0.9")"}, std::pair{R"("IPv4")", R"("224.1.2.3")"},
          std::pair{R"("IPv4")", R"("169.253.0.1")"}, std::pair{R"("IPv6")", R"("fd00::5")"},
          std::pair{R"("IPv6")", R"("ff05::2")"}}) {
        INFO(address);
        CHECK(decoded(type, address).ok());
    }
}

TEST_CASE("watch events: BOOKMARK and ERROR 410") {
    auto bookmark = decode_watch_event(
        R"({"type":"BOOKMARK","object":{"kind":"Service","apiVersion":"v1",)"
        R"("metadata":{"resourceVersion":"12746","annotations":{"k8s.io/initial-events-end":"true"}}}})");
    REQUIRE(bookmark.ok());
    CHECK(bookmark->type == WatchEvent::Type::kBookmark);
    CHECK(bookmark->resource_version == "12746");

    auto gone = decode_watch_event(
        R"({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},)"
        R"j("status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}})j");
    REQUIRE(gone.ok());
    CHECK(gone->type == WatchEvent::Type::kError);
    CHECK(gone->status_code == 410);
    CHECK(gone->status_message == "too old resource version: 1 (2)");

    auto expired = decode_watch_event(
        R"({"type":"ERROR","object":{"kind":"Status","reason":"Expired","message":"m"}})");
    REQUIRE(expired.ok());
    CHECK(expired->status_code == 410);  // client-go reads reason Expired as 410
}

TEST_CASE("malformed watch events are errors naming the field") {
    auto unknown = decode_watch_event(R"({"type":"SYNC","object":{}})");
    REQUIRE_FALSE(unknown.ok());
    CHECK(unknown.error().message.find("watch event: type: unknown event type \"SYNC\"") == 0);
    auto no_object = decode_watch_event(R"({"type":"ADDED"})");
    REQUIRE_FALSE(no_object.ok());
    CHECK(no_object.error().message == "watch event: object: required field is missing");
    auto truncated = decode_watch_event(R"({"type":"ADDED","object":{"kind":"Serv)");
    REQUIRE_FALSE(truncated.ok());
    CHECK(truncated.error().message.find("watch event: invalid JSON") == 0);
    auto bookmark = decode_watch_event(R"({"type":"BOOKMARK","object":{"kind":"Service"}})");
    REQUIRE_FALSE(bookmark.ok());
    CHECK(bookmark.error().message.find("object.metadata.resourceVersion") != std::string::npos);
    auto bad_service = decode_watch_event(
        R"({"type":"ADDED","object":{"kind":"Service","metadata":{"name":"a","namespace":"b"},)"
        R"("spec":{"ports":[{"port":"x"}]}}})");
    // A named object that fails validation is an event marked rejected
    // (test_apply_event.cpp); one whose name cannot be read is an error.
    REQUIRE(bad_service.ok());
    CHECK(bad_service->rejected ==
          "Service b/a: spec.ports[0].port: expected an integer, got string");
    auto nameless = decode_watch_event(
        R"({"type":"ADDED","object":{"kind":"Service","metadata":{"namespace":"b"},)"
        R"("spec":{"ports":[{"port":"x"}]}}})");
    REQUIRE_FALSE(nameless.ok());
    CHECK(nameless.error().message.find("metadata.name") != std::string::npos);
}

TEST_CASE("RFC 1123 labels and subdomains") {
    CHECK(is_dns_label("a"));
    CHECK(is_dns_label("web-1"));
    CHECK(is_dns_label("1web"));
    CHECK(is_dns_label(std::string(63, 'a')));
    CHECK_FALSE(is_dns_label(std::string(64, 'a')));
    CHECK_FALSE(is_dns_label(""));
    CHECK_FALSE(is_dns_label("-web"));
    CHECK_FALSE(is_dns_label("web-"));
    CHECK_FALSE(is_dns_label("Web"));
    CHECK_FALSE(is_dns_label("we_b"));
    CHECK_FALSE(is_dns_label("a.b"));
    CHECK(is_dns_subdomain("a.b-c.example"));
    CHECK_FALSE(is_dns_subdomain("a..b"));
    CHECK_FALSE(is_dns_subdomain(".a"));
    CHECK_FALSE(is_dns_subdomain("a."));
    CHECK_FALSE(is_dns_subdomain(std::string(64, 'a') + ".b"));
    const std::string label(63, 'a');
    const std::string longest = label + "." + label + "." + label + "." + std::string(61, 'a');
    REQUIRE(longest.size() == 253);
    CHECK(is_dns_subdomain(longest));
    CHECK_FALSE(is_dns_subdomain(longest + "a"));  // 254 characters
}

TEST_CASE("last_change_trigger_time reads the annotation as RFC 3339") {
    EndpointSlice slice;
    CHECK_FALSE(last_change_trigger_time(slice));
    slice.meta.annotations[kLastChangeTriggerTimeAnnotation] = "2024-05-01T12:00:00.25+02:00";
    auto time = last_change_trigger_time(slice);
    REQUIRE(time);
    CHECK(format_rfc3339_nano(*time) == "2024-05-01T10:00:00.25Z");
    slice.meta.annotations[kLastChangeTriggerTimeAnnotation] = "yesterday";
    CHECK_FALSE(last_change_trigger_time(slice));
}
