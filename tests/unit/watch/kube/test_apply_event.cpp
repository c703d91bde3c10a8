// The reflector's rule for watch events (issue 10, point 7): an invalid
// ADDED or MODIFIED object leaves the Store as a relist of the same cluster
// leaves it, so nodes converge whatever history they watched.
#include <catch.hpp>
#include <string>

#include "watch/decode.h"
#include "watch/kube/apply_event.h"
#include "watch/store.h"

using namespace sb::watch;
using namespace sb::watch::kube;

namespace {

// Service default/web at resourceVersion `version` with port `port` (0 is
// out of range: the object fails validation).
std::string web(int port, int version) {
    return R"({"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"default",)"
           R"("resourceVersion":")" +
           std::to_string(version) + R"("},"spec":{"clusterIP":"10.96.0.10","ports":[{"port":)" +
           std::to_string(port) + "}]}}";
}

WatchEvent event(const char* type, const std::string& object) {
    auto decoded =
        decode_watch_event(std::string(R"({"type":")") + type + R"(","object":)" + object + "}");
    REQUIRE(decoded.ok());
    return std::move(*decoded);
}

// What a relist of a cluster holding `object` stores.
void relist(Store& store, const std::string& object) {
    auto document = decode_document(R"({"kind":"ServiceList","items":[)" + object + "]}");
    REQUIRE(document.ok());
    store.replace(Kind::kService, std::move(document->objects));
}

bool holds_web(const Store& store) {
    return store.snapshot()->find_service(ObjectKey{"default", "web"}) != nullptr;
}

}  // namespace

TEST_CASE("an invalid MODIFIED drops the object, as a relist of the same cluster does") {
    Store watched;  // saw the valid version, then the invalid MODIFIED
    auto added = event("ADDED", web(80, 1));
    CHECK(apply_watch_event(watched, Kind::kService, added) == Applied::kUpserted);
    REQUIRE(holds_web(watched));
    auto modified = event("MODIFIED", web(0, 2));
    CHECK(modified.rejected ==
          "Service default/web: spec.ports[0].port: port 0 out of range 1-65535");
    CHECK(modified.resource_version == "2");
    CHECK(apply_watch_event(watched, Kind::kService, modified) == Applied::kRejected);

    Store listed;  // started after the change: its first LIST holds the invalid version
    relist(listed, web(0, 2));

    CHECK_FALSE(holds_web(watched));
    CHECK_FALSE(holds_web(listed));
    CHECK(watched.snapshot()->service_count() == listed.snapshot()->service_count());

    // A valid version comes back to both the same way.
    auto fixed = event("MODIFIED", web(8080, 3));
    CHECK(apply_watch_event(watched, Kind::kService, fixed) == Applied::kUpserted);
    relist(listed, web(8080, 3));
    REQUIRE(holds_web(watched));
    REQUIRE(holds_web(listed));
    CHECK(*watched.snapshot()->find_service({"default", "web"}) ==
          *listed.snapshot()->find_service({"default", "web"}));
}

TEST_CASE("an invalid ADDED stores nothing, and DELETED removes whatever its final state") {
    Store store;
    auto added = event("ADDED", web(0, 1));
    CHECK_FALSE(added.rejected.empty());
    CHECK(apply_watch_event(store, Kind::kService, added) == Applied::kRejected);
    CHECK_FALSE(holds_web(store));

    auto valid = event("ADDED", web(80, 2));
    CHECK(apply_watch_event(store, Kind::kService, valid) == Applied::kUpserted);
    auto deleted = event("DELETED", web(0, 3));
    CHECK(deleted.rejected.empty());
    CHECK(apply_watch_event(store, Kind::kService, deleted) == Applied::kRemoved);
    CHECK_FALSE(holds_web(store));
}
