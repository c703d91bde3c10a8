// Decoding ServiceCIDRs (networking.k8s.io/v1): good objects, the API
// server's rules for spec.cidrs, and a bad object in a list that leaves the
// rest loaded.
#include <catch.hpp>
#include <string>

#include "watch/decode.h"

using namespace sb::watch;
using Catch::Matchers::Contains;

namespace {

// The default ServiceCIDR as the API server creates it (kubectl get -o json).
std::string service_cidr(const std::string& name, const std::string& cidrs) {
    return R"({"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR",)"
           R"("metadata":{"name":")" +
           name +
           R"(","resourceVersion":"17","uid":"4c1f3c2e-8d44-4a2f-9d1e-0f6b7d1c2a3b"},)"
           R"("spec":{"cidrs":)" +
           cidrs +
           R"(},"status":{"conditions":[{"type":"Ready","status":"True",)"
           R"("reason":"","message":"","lastTransitionTime":"2025-04-23T10:00:00Z"}]}})";
}

sb::Result<ServiceCIDR> decoded(const std::string& json) {
    rapidjson::Document document;
    document.Parse(json.c_str());
    REQUIRE_FALSE(document.HasParseError());
    return decode_service_cidr(document);
}

std::string error_of(const std::string& cidrs) {
    auto result = decoded(service_cidr("kubernetes", cidrs));
    return result.ok() ? "" : result.error().message;
}

}  // namespace

TEST_CASE("a ServiceCIDR decodes its name and its one or two ranges") {
    auto single = decoded(service_cidr("kubernetes", R"(["10.96.0.0/16"])"));
    REQUIRE(single.ok());
    CHECK(single->meta.key() == ObjectKey{"", "kubernetes"});
    CHECK(single->meta.resource_version == "17");
    REQUIRE(single->cidrs.size() == 1);
    CHECK(single->cidrs[0].to_string() == "10.96.0.0/16");

    auto dual = decoded(service_cidr("dual", R"(["fd00:10:96::/112","10.96.0.0/16"])"));
    REQUIRE(dual.ok());
    REQUIRE(dual->cidrs.size() == 2);
    CHECK(dual->cidrs[0].to_string() == "fd00:10:96::/112");
    CHECK(dual->cidrs[1].to_string() == "10.96.0.0/16");
}

TEST_CASE("a ServiceCIDR breaking the API server's rules is refused, naming the field") {
    CHECK_THAT(error_of("[]"), Contains("ServiceCIDR kubernetes: spec.cidrs: required"));
    CHECK_THAT(error_of(R"(["10.96.0.0/16","fd00::/112","10.97.0.0/16"])"),
               Contains("spec.cidrs: too many items: 3 (at most 2)"));
    CHECK_THAT(error_of(R"(["10.96.0.0/16","10.97.0.0/16"])"),
               Contains("spec.cidrs[1]: a second IPv4 CIDR"));
    CHECK_THAT(error_of(R"(["fd00::/112","fd01::/112"])"),
               Contains("spec.cidrs[1]: a second IPv6 CIDR"));
    CHECK_THAT(error_of(R"(["10.96.0.1/16"])"), Contains("spec.cidrs[0]: invalid CIDR"));
    CHECK_THAT(error_of(R"(["10.96.0.1/16"])"), Contains("host bits set"));
    CHECK_THAT(error_of(R"(["10.96.0.0"])"), Contains("missing /length"));
    CHECK_THAT(error_of(R"(["10.96.0.0/33"])"), Contains("length out of range"));
    CHECK_THAT(error_of(R"(["010.96.0.0/16"])"), Contains("spec.cidrs[0]: invalid CIDR"));
    CHECK_THAT(error_of(R"(["cluster"])"), Contains("spec.cidrs[0]"));
    CHECK_THAT(error_of(R"([16])"), Contains("spec.cidrs[0]: expected a string"));
    CHECK_THAT(error_of(R"("10.96.0.0/16")"), Contains("spec.cidrs: expected an array"));
    auto no_spec =
        decoded(R"({"kind":"ServiceCIDR","metadata":{"name":"kubernetes","resourceVersion":"1"}})");
    REQUIRE_FALSE(no_spec.ok());
    CHECK_THAT(no_spec.error().message, Contains("spec: required field is missing"));
}

TEST_CASE("a bad ServiceCIDR in a list is skipped and reported; the rest load") {
    const std::string list = R"({"kind":"ServiceCIDRList","metadata":{"resourceVersion":"40"},)"
                             R"("items":[)" +
                             service_cidr("kubernetes", R"(["10.96.0.0/16"])") + "," +
                             service_cidr("bad", R"(["10.97.0.1/16"])") + "," +
                             service_cidr("extra", R"(["10.98.0.0/24"])") + "]}";
    auto document = decode_document(list);
    REQUIRE(document.ok());
    REQUIRE(document->objects.service_cidrs.size() == 2);
    CHECK(document->objects.service_cidrs[0].meta.name == "kubernetes");
    CHECK(document->objects.service_cidrs[1].meta.name == "extra");
    REQUIRE(document->errors.size() == 1);
    CHECK(document->errors[0].describe().find("ServiceCIDR bad: spec.cidrs[0]") == 0);
    CHECK(document->resource_version == "40");

    // kubectl's generic List names each item's kind.
    auto generic = decode_document(R"({"kind":"List","items":[)" +
                                   service_cidr("kubernetes", R"(["10.96.0.0/16"])") + "]}");
    REQUIRE(generic.ok());
    CHECK(generic->objects.service_cidrs.size() == 1);
}

TEST_CASE("a ServiceCIDR watch event decodes; a deleted one yields its key") {
    auto added = decode_watch_event(R"({"type":"ADDED","object":)" +
                                    service_cidr("kubernetes", R"(["10.96.0.0/16"])") + "}");
    REQUIRE(added.ok());
    REQUIRE(std::holds_alternative<ServiceCIDR>(added->object));
    CHECK(std::get<ServiceCIDR>(added->object).cidrs.size() == 1);
    auto rejected = decode_watch_event(R"({"type":"MODIFIED","object":)" +
                                       service_cidr("kubernetes", R"(["10.96.0.1/16"])") + "}");
    REQUIRE(rejected.ok());
    CHECK_THAT(rejected->rejected, Contains("host bits set"));
    CHECK(std::get<ServiceCIDR>(rejected->object).meta.name == "kubernetes");
}
