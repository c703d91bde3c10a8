#include <catch.hpp>

#include "watch/store.h"

using namespace sb::watch;

namespace {

Service make_service(const std::string& ns, const std::string& name) {
    Service service;
    service.meta.ns = ns;
    service.meta.name = name;
    service.cluster_ips = {*sb::IpAddress::parse("10.96.0.1")};
    return service;
}

EndpointSlice make_slice(const std::string& ns, const std::string& name, const std::string& svc) {
    EndpointSlice slice;
    slice.meta.ns = ns;
    slice.meta.name = name;
    slice.service_name = svc;
    return slice;
}

}  // namespace

TEST_CASE("the store notifies real changes only") {
    Store store;
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    store.upsert(make_service("default", "web"));
    store.upsert(make_service("default", "web"));
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].service == ObjectKey{"default", "web"});
    store.remove(Kind::kService, {"default", "web"});
    store.remove(Kind::kService, {"default", "web"});
    CHECK(seen.size() == 2);
}

TEST_CASE("a slice change names its service, and both services when the label moves") {
    Store store;
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    store.upsert(make_slice("default", "web-abc", "web"));
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].service == ObjectKey{"default", "web"});
    seen.clear();
    store.upsert(make_slice("default", "web-abc", "api"));
    REQUIRE(seen.size() == 2);
    CHECK(seen[0].service == ObjectKey{"default", "web"});
    CHECK(seen[1].service == ObjectKey{"default", "api"});
}

TEST_CASE("replace diffs against the stored objects and snapshots are immutable") {
    Store store;
    store.replace({{make_service("a", "one"), make_service("a", "two")}, {}, {}});
    auto before = store.snapshot();
    CHECK(before->services.size() == 2);
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    store.replace({{make_service("a", "two"), make_service("b", "three")}, {}, {}});
    REQUIRE(seen.size() == 2);  // a/three added, a/one deleted; a/two unchanged
    CHECK(before->services.size() == 2);
    CHECK(before->services.count({"a", "one"}) == 1);
    auto after = store.snapshot();
    CHECK(after->services.count({"a", "one"}) == 0);
    CHECK(after->generation > before->generation);
    CHECK(store.snapshot() == after);
}

TEST_CASE("slices_for finds the slices labelled with a service in its namespace") {
    Store store;
    store.replace({{},
                   {make_slice("a", "web-1", "web"), make_slice("a", "web-2", "web"),
                    make_slice("a", "api-1", "api"), make_slice("b", "web-1", "web")},
                   {}});
    auto snapshot = store.snapshot();
    CHECK(snapshot->slices_for({"a", "web"}).size() == 2);
    CHECK(snapshot->slices_for({"b", "web"}).size() == 1);
    CHECK(snapshot->slices_for({"c", "web"}).empty());
}

TEST_CASE("set_synced is reflected in snapshots and notifies") {
    Store store;
    int notified = 0;
    store.subscribe([&](const std::vector<Change>&) { ++notified; });
    CHECK_FALSE(store.snapshot()->synced);
    store.set_synced(true);
    CHECK(store.snapshot()->synced);
    CHECK(notified == 1);
    store.set_synced(true);
    CHECK(notified == 1);
}
