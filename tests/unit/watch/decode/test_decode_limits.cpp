// Size limits of decoded objects (issue 10, point 3): the API server's
// EndpointSlice limits, our bound on a Service's ports, and duplicate checks
// that stay O(n log n) at those sizes.
#include <catch.hpp>
#include <string>

#include "watch/decode.h"

using namespace sb::watch;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {

// `count` TCP ports named PREFIX0, PREFIX1... and numbered from 1, as a JSON
// array's items; the last one repeats the first one's name when
// `duplicate_last`.
std::string named_ports(const char* prefix, size_t count, bool duplicate_last) {
    std::string ports;
    for (size_t i = 0; i < count; ++i) {
        const bool repeat = duplicate_last && i + 1 == count;
        if (i) ports += ',';
        ports += R"({"name":")" + std::string(prefix) + std::to_string(repeat ? 0 : i) +
                 R"(","protocol":"TCP","port":)" + std::to_string(i % 65535 + 1) + "}";
    }
    return ports;
}

// A ClusterIP Service with `count` ports p0, p1...
std::string service_with_ports(size_t count, bool duplicate_last = false) {
    return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"many","namespace":"default"},)"
           R"("spec":{"clusterIP":"10.96.0.10","ports":[)" +
           named_ports("p", count, duplicate_last) + "]}}";
}

// The i-th of distinct IPv4 addresses in 10.0.0.0/8 (last octet 1-250).
std::string ipv4(size_t i) {
    const size_t high = i / 250;
    return "10." + std::to_string(high / 250 % 250) + "." + std::to_string(high % 250) + "." +
           std::to_string(i % 250 + 1);
}

// An IPv4 slice of `endpoints` endpoints with `addresses` addresses each and
// `ports` ports q0, q1...; the last port repeats the first's name when
// `duplicate_last`.
std::string slice_of(size_t endpoints, size_t addresses, size_t ports,
                     bool duplicate_last = false) {
    std::string endpoint_list;
    for (size_t e = 0; e < endpoints; ++e) {
        if (e) endpoint_list += ',';
        endpoint_list += R"({"addresses":[)";
        for (size_t a = 0; a < addresses; ++a) {
            if (a) endpoint_list += ',';
            endpoint_list += '"' + ipv4(e * addresses + a) + '"';
        }
        endpoint_list += "]}";
    }
    return R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice",)"
           R"("metadata":{"name":"many-abc","namespace":"default",)"
           R"("labels":{"kubernetes.io/service-name":"many"}},"addressType":"IPv4","endpoints":[)" +
           endpoint_list + R"(],"ports":[)" + named_ports("q", ports, duplicate_last) + "]}";
}

// The error of decoding one object document; "" when it decoded.
std::string error_of(const std::string& json) {
    auto document = decode_document(json);
    REQUIRE(document.ok());
    if (document->errors.empty()) return "";
    REQUIRE(document->errors.size() == 1);
    return document->errors[0].describe();
}

}  // namespace

TEST_CASE("a Service with 100k ports is rejected at the ports cap, without decoding them") {
    CHECK_THAT(error_of(service_with_ports(100000)),
               StartsWith("Service default/many: spec.ports: ") &&
                   Contains("too many items: 100000 (at most 20000)"));
}

TEST_CASE("a Service at the ports cap decodes, and its duplicate checks stay O(n log n)") {
    CHECK(error_of(service_with_ports(20000)).empty());
    CHECK(error_of(service_with_ports(20001)) ==
          "Service default/many: spec.ports: too many items: 20001 (at most 20000)");
    CHECK(error_of(service_with_ports(20000, /*duplicate_last=*/true)) ==
          "Service default/many: spec.ports[19999].name: duplicate port name \"p0\" "
          "(also spec.ports[0])");
}

TEST_CASE("a duplicate port number and protocol is found among many ports") {
    std::string within = service_with_ports(20000);
    const std::string tail = R"({"name":"p19999","protocol":"TCP","port":20000})";
    const auto at = within.find(tail);
    REQUIRE(at != std::string::npos);
    within.replace(at, tail.size(), R"({"name":"p19999","protocol":"TCP","port":7})");
    CHECK(error_of(within) ==
          "Service default/many: spec.ports[19999]: duplicate port 7/TCP (also spec.ports[6])");
}

TEST_CASE("EndpointSlice limits are the API server's: 1000 endpoints, 100 ports, 100 addresses") {
    CHECK(error_of(slice_of(1000, 1, 100)).empty());
    CHECK(error_of(slice_of(1001, 1, 1)) ==
          "EndpointSlice default/many-abc: endpoints: too many items: 1001 (at most 1000)");
    CHECK(error_of(slice_of(1, 1, 101)) ==
          "EndpointSlice default/many-abc: ports: too many items: 101 (at most 100)");
    CHECK(error_of(slice_of(2, 100, 1)).empty());
    CHECK(error_of(slice_of(2, 101, 1)) ==
          "EndpointSlice default/many-abc: endpoints[0].addresses: too many items: 101 (at most "
          "100)");
    CHECK(error_of(slice_of(1, 1, 100, /*duplicate_last=*/true)) ==
          "EndpointSlice default/many-abc: ports[99].name: duplicate port name \"q0\" (also "
          "ports[0])");
}

TEST_CASE("an object over a cap is skipped like any invalid object; the list still loads") {
    const std::string list = R"({"apiVersion":"v1","kind":"List","items":[)" +
                             service_with_ports(20001) + "," + service_with_ports(3) + "]}";
    // Both items are named "many": the valid one is what the list keeps.
    auto document = decode_document(list);
    REQUIRE(document.ok());
    REQUIRE(document->errors.size() == 1);
    CHECK(document->errors[0].path == "spec.ports");
    REQUIRE(document->objects.services.size() == 1);
    CHECK(document->objects.services[0].ports.size() == 3);
}
