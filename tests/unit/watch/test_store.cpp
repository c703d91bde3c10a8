#include <catch.hpp>
#include <set>

#include "watch/snapshot_builder.h"
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
    store.replace({{make_service("a", "one"), make_service("a", "two")}, {}, {}, {}, {}});
    auto before = store.snapshot();
    CHECK(before->service_count() == 2);
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    store.replace({{make_service("a", "two"), make_service("b", "three")}, {}, {}, {}, {}});
    REQUIRE(seen.size() == 2);  // a/three added, a/one deleted; a/two unchanged
    CHECK(before->service_count() == 2);
    CHECK(before->find_service({"a", "one"}) != nullptr);
    auto after = store.snapshot();
    CHECK(after->find_service({"a", "one"}) == nullptr);
    CHECK(after->generation() > before->generation());
    CHECK(store.snapshot() == after);
}

TEST_CASE("replace of one kind's shared objects stores them as given and diffs the rest") {
    // What a paged LIST hands over (Reflector::list).
    Store store;
    store.replace(Kind::kService, Store::Objects{{make_service("a", "one")}, {}, {}, {}, {}});
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    auto two = std::make_shared<const Service>(make_service("a", "two"));
    Store::SharedObjects wanted;
    wanted.services = {two, std::make_shared<const Service>(make_service("a", "one"))};
    store.replace(Kind::kService, std::move(wanted));
    REQUIRE(seen.size() == 1);  // a/two added; a/one unchanged
    CHECK(seen[0].key == ObjectKey{"a", "two"});
    CHECK(store.snapshot()->find_service({"a", "two"}) == two.get());
    store.replace(Kind::kService, Store::SharedObjects{});
    CHECK(store.snapshot()->service_count() == 0);
}

namespace {

std::vector<std::string> slice_names(const ServiceEntry* entry) {
    std::vector<std::string> names;
    if (entry) {
        for (const auto& slice : entry->slices) names.push_back(slice->meta.name);
    }
    return names;
}

using Names = std::vector<std::string>;

}  // namespace

TEST_CASE("the index holds each Service with its labelled slices in its namespace, sorted") {
    Store store;
    store.upsert(make_slice("a", "web-2", "web"));
    store.upsert(make_slice("a", "web-1", "web"));
    store.replace(Kind::kEndpointSlice,
                  {{},
                   {make_slice("a", "web-2", "web"), make_slice("a", "web-1", "web"),
                    make_slice("a", "api-1", "api"), make_slice("b", "web-1", "web"),
                    make_slice("a", "loose", "")},
                   {},
                   {},
                   {}});
    store.upsert(make_service("a", "web"));
    auto snapshot = store.snapshot();
    REQUIRE(snapshot->service({"a", "web"}));
    CHECK(snapshot->service({"a", "web"})->service);
    CHECK(slice_names(snapshot->service({"a", "web"})) == Names{"web-1", "web-2"});
    // Slices whose Service does not exist (yet) have an entry without one.
    REQUIRE(snapshot->service({"b", "web"}));
    CHECK_FALSE(snapshot->service({"b", "web"})->service);
    CHECK(slice_names(snapshot->service({"b", "web"})) == Names{"web-1"});
    CHECK(snapshot->service({"c", "web"}) == nullptr);
    CHECK(snapshot->service_count() == 1);
    // An unlabelled slice belongs to no entry but is stored.
    CHECK(snapshot->endpoint_slices().size() == 5);
    CHECK(snapshot->endpoint_slices().contains({"a", "loose"}));
    std::vector<ObjectKey> keys;
    for (const auto& [key, entry] : snapshot->services()) keys.push_back(key);
    CHECK(keys == std::vector<ObjectKey>{{"a", "api"}, {"a", "web"}, {"b", "web"}});
}

TEST_CASE("the index follows a moved label, a deleted slice and a deleted Service") {
    Store store;
    store.upsert(make_service("a", "web"));
    store.upsert(make_slice("a", "s-1", "web"));
    store.upsert(make_slice("a", "s-2", "web"));
    store.upsert(make_slice("a", "s-1", "api"));
    auto moved = store.snapshot();
    CHECK(slice_names(moved->service({"a", "web"})) == Names{"s-2"});
    CHECK(slice_names(moved->service({"a", "api"})) == Names{"s-1"});
    store.remove(Kind::kEndpointSlice, {"a", "s-1"});
    CHECK(store.snapshot()->service({"a", "api"}) == nullptr);
    store.remove(Kind::kService, {"a", "web"});
    auto removed = store.snapshot();
    REQUIRE(removed->service({"a", "web"}));  // its slice is still there
    CHECK_FALSE(removed->service({"a", "web"})->service);
    CHECK(removed->service_count() == 0);
    store.remove(Kind::kEndpointSlice, {"a", "s-2"});
    CHECK(store.snapshot()->services().empty());
    // Earlier snapshots are unchanged.
    CHECK(slice_names(moved->service({"a", "web"})) == Names{"s-2"});
    CHECK(moved->find_service({"a", "web"}) != nullptr);
}

TEST_CASE("a snapshot after one change shares every unchanged entry with the one before") {
    Store store;
    for (int i = 0; i < 200; ++i) {
        const std::string name = "svc-" + std::to_string(i);
        store.upsert(make_service("a", name));
        store.upsert(make_slice("a", name + "-x", name));
    }
    auto before = store.snapshot();
    EndpointSlice changed = make_slice("a", "svc-7-x", "svc-7");
    changed.meta.resource_version = "2";
    store.upsert(changed);
    auto after = store.snapshot();
    size_t shared = 0;
    for (const auto& [key, entry] : after->services()) {
        if (before->service(key) == entry.get()) ++shared;
    }
    CHECK(shared == 199);
    CHECK(before->service({"a", "svc-7"})->slices[0]->meta.resource_version.empty());
    CHECK(after->service({"a", "svc-7"})->slices[0]->meta.resource_version == "2");
    CHECK(after->find_service({"a", "svc-7"}) == before->find_service({"a", "svc-7"}));
}

TEST_CASE("a built snapshot has the index the Store keeps for the same objects") {
    Store store;
    SnapshotBuilder builder;
    for (const auto& slice : {make_slice("a", "web-2", "web"), make_slice("a", "web-1", "web"),
                              make_slice("a", "api-1", "api")}) {
        store.upsert(slice);
        builder.add(slice);
    }
    store.upsert(make_service("a", "web"));
    builder.add(make_service("a", "web"));
    auto stored = store.snapshot();
    auto built = builder.build();
    REQUIRE(built->services().size() == stored->services().size());
    for (const auto& [key, entry] : stored->services()) {
        REQUIRE(built->service(key));
        CHECK(*built->service(key) == *entry);
    }
    CHECK(built->service_count() == 1);
}

TEST_CASE("set_synced is reflected in snapshots and notifies") {
    Store store;
    int notified = 0;
    store.subscribe([&](const std::vector<Change>&) { ++notified; });
    CHECK_FALSE(store.snapshot()->synced());
    store.set_synced(true);
    CHECK(store.snapshot()->synced());
    CHECK(notified == 1);
    store.set_synced(true);
    CHECK(notified == 1);
}

namespace {

Pod make_pod(const std::string& ns, const std::string& name, const char* ip) {
    Pod pod;
    pod.meta.ns = ns;
    pod.meta.name = name;
    pod.node_name = "node-a";
    pod.pod_ips = {*sb::IpAddress::parse(ip)};
    return pod;
}

}  // namespace

TEST_CASE("Pods are kept by key, notified with no Service, and feed no Service entry") {
    Store store;
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    store.upsert(make_pod("a", "web-1", "10.244.1.7"));
    store.upsert(make_pod("a", "web-1", "10.244.1.7"));  // equal: no change
    REQUIRE(seen.size() == 1);
    CHECK(seen[0].kind == Kind::kPod);
    CHECK(seen[0].key == ObjectKey{"a", "web-1"});
    CHECK(seen[0].service == ObjectKey{});
    auto snapshot = store.snapshot();
    REQUIRE(snapshot->pods().size() == 1);
    CHECK((*snapshot->pods().find(ObjectKey{"a", "web-1"}))->pod_ips[0] ==
          *sb::IpAddress::parse("10.244.1.7"));
    CHECK(snapshot->services().empty());

    store.upsert(make_pod("a", "web-1", "10.244.1.8"));
    REQUIRE(seen.size() == 2);
    CHECK((*store.snapshot()->pods().find(ObjectKey{"a", "web-1"}))->pod_ips[0] ==
          *sb::IpAddress::parse("10.244.1.8"));
    // The earlier snapshot still holds the Pod as it was.
    CHECK((*snapshot->pods().find(ObjectKey{"a", "web-1"}))->pod_ips[0] ==
          *sb::IpAddress::parse("10.244.1.7"));

    store.remove(Kind::kPod, {"a", "web-1"});
    store.remove(Kind::kPod, {"a", "web-1"});
    REQUIRE(seen.size() == 3);
    CHECK(seen[2].kind == Kind::kPod);
    CHECK(store.snapshot()->pods().empty());
}

TEST_CASE("replace diffs Pods too, and a built snapshot holds them") {
    Store store;
    Store::Objects first;
    first.pods = {make_pod("a", "one", "10.244.1.1"), make_pod("a", "two", "10.244.1.2")};
    first.services = {make_service("a", "web")};
    store.replace(std::move(first));
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    Store::Objects second;
    second.pods = {make_pod("a", "two", "10.244.1.2"), make_pod("b", "three", "10.244.2.3")};
    second.services = {make_service("a", "web")};
    store.replace(std::move(second));
    // b/three added, a/one deleted; a/two and the Service unchanged.
    REQUIRE(seen.size() == 2);
    std::set<ObjectKey> keys;
    for (const auto& change : seen) {
        CHECK(change.kind == Kind::kPod);
        CHECK(change.service.name.empty());
        keys.insert(change.key);
    }
    CHECK(keys == std::set<ObjectKey>{{"a", "one"}, {"b", "three"}});
    CHECK(store.snapshot()->pods().size() == 2);

    auto built = SnapshotBuilder().add(make_pod("a", "one", "10.244.1.1")).build();
    CHECK(built->pods().size() == 1);
    CHECK(built->services().empty());
}

TEST_CASE("apply writes removals and upserts as one batch, one notification of the real changes") {
    Store store;
    Store::Objects first;
    first.services = {make_service("a", "web"), make_service("a", "db")};
    first.endpoint_slices = {make_slice("a", "web-1", "web")};
    first.pods = {make_pod("a", "one", "10.244.1.1")};
    store.replace(std::move(first));
    const auto before = store.snapshot();
    std::vector<std::vector<Change>> batches;
    store.subscribe([&](const std::vector<Change>& changes) { batches.push_back(changes); });

    Store::Objects upserts;
    upserts.services = {make_service("a", "web"), make_service("b", "api")};  // web unchanged
    upserts.endpoint_slices = {make_slice("a", "web-1", "db")};               // label moved
    store.apply({{Kind::kService, {"a", "db"}}, {Kind::kPod, {"a", "one"}}}, std::move(upserts));
    REQUIRE(batches.size() == 1);
    std::set<std::pair<ObjectKey, ObjectKey>> seen;  // (object, Service)
    for (const auto& change : batches[0]) seen.insert({change.key, change.service});
    CHECK(seen == std::set<std::pair<ObjectKey, ObjectKey>>{{{"a", "db"}, {"a", "db"}},
                                                            {{"a", "one"}, {}},
                                                            {{"b", "api"}, {"b", "api"}},
                                                            {{"a", "web-1"}, {"a", "web"}},
                                                            {{"a", "web-1"}, {"a", "db"}}});
    const auto after = store.snapshot();
    CHECK(after->generation() == before->generation() + 1);
    CHECK(after->find_service({"a", "db"}) == nullptr);
    CHECK(after->find_service({"b", "api"}) != nullptr);
    CHECK(after->pods().empty());
    CHECK(slice_names(after->service({"a", "db"})) == Names{"web-1"});
    CHECK(slice_names(after->service({"a", "web"})).empty());
    // Not named by the batch: kept.
    CHECK(after->find_service({"a", "web"}) != nullptr);
}

TEST_CASE("apply removes before it upserts, and a batch that changes nothing notifies nobody") {
    Store store;
    store.upsert(make_service("a", "web"));
    const auto generation = store.snapshot()->generation();
    int batches = 0;
    store.subscribe([&](const std::vector<Change>&) { ++batches; });

    Store::Objects same;
    same.services = {make_service("a", "web")};
    store.apply({{Kind::kService, {"a", "gone"}}, {Kind::kNode, {"", "node-x"}}}, std::move(same));
    CHECK(batches == 0);
    CHECK(store.snapshot()->generation() == generation);

    Store::Objects again;
    again.services = {make_service("a", "web")};
    store.apply({{Kind::kService, {"a", "web"}}}, std::move(again));
    CHECK(store.snapshot()->find_service({"a", "web"}) != nullptr);
    CHECK(batches == 1);
}
