// Store::replace(kind, ...): one resource's relist leaves the other kinds alone.
#include <catch.hpp>
#include <set>

#include "watch/store.h"

using namespace sb::watch;

namespace {

// An object of kind T named default/NAME, with `set` applied.
template <typename T, typename Set>
T object(const std::string& name, Set set) {
    T value;
    value.meta.ns = "default";
    value.meta.name = name;
    set(value);
    return value;
}

Service service(const std::string& name, uint16_t port) {
    return object<Service>(name, [port](Service& s) {
        s.ports = {{"", Protocol::kTCP, port, {}, 0}};
    });
}

EndpointSlice slice(const std::string& name, const std::string& service_name) {
    return object<EndpointSlice>(name, [&](EndpointSlice& s) { s.service_name = service_name; });
}

}  // namespace

TEST_CASE("per-kind replace diffs one kind and keeps the others") {
    Store store;
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    store.upsert(service("kept", 80));
    store.upsert(service("changed", 80));
    store.upsert(service("deleted", 80));
    store.upsert(slice("kept-abc", "kept"));
    seen.clear();
    uint64_t generation = store.snapshot()->generation();

    Store::Objects relist;
    relist.services = {service("kept", 80), service("changed", 81), service("new", 53)};
    // Ignored: only the Services are replaced.
    relist.endpoint_slices = {slice("other", "x")};
    store.replace(Kind::kService, relist);

    auto snapshot = store.snapshot();
    CHECK(snapshot->generation() > generation);
    CHECK(snapshot->service_count() == 3);
    CHECK(snapshot->find_service({"default", "deleted"}) == nullptr);
    CHECK(snapshot->find_service({"default", "changed"})->ports[0].port == 81);
    REQUIRE(snapshot->endpoint_slices().size() == 1);
    CHECK(snapshot->endpoint_slices().contains({"default", "kept-abc"}));
    REQUIRE(seen.size() == 3);  // changed, new, deleted; "kept" unchanged
    for (const auto& change : seen) CHECK(change.kind == Kind::kService);

    seen.clear();
    store.replace(Kind::kService, relist);
    CHECK(seen.empty());
    CHECK(store.snapshot()->generation() == snapshot->generation());
}

TEST_CASE("per-kind replace of slices reports the affected services, incl. a moved label") {
    Store store;
    store.upsert(slice("s1", "a"));
    store.upsert(slice("s2", "b"));
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    Store::Objects relist;
    relist.endpoint_slices = {slice("s1", "c")};
    store.replace(Kind::kEndpointSlice, relist);
    std::set<std::string> services;
    for (const auto& change : seen) services.insert(change.service.name);
    CHECK(services == std::set<std::string>{"a", "b", "c"});
    CHECK(store.snapshot()->endpoint_slices().size() == 1);
}

TEST_CASE("per-kind replace of nodes") {
    Store store;
    Node node;
    node.meta.name = "node-a";
    store.upsert(node);
    store.upsert(service("svc", 80));
    store.replace(Kind::kNode, Store::Objects{});
    CHECK(store.snapshot()->nodes().empty());
    CHECK(store.snapshot()->service_count() == 1);
}

TEST_CASE("per-kind replace of pods keeps the other kinds and reports Pod changes") {
    Store store;
    store.upsert(service("svc", 80));
    store.upsert(object<Pod>("old", [](Pod&) {}));
    std::vector<Change> seen;
    store.subscribe([&](const std::vector<Change>& changes) {
        seen.insert(seen.end(), changes.begin(), changes.end());
    });
    Store::Objects relisted;
    relisted.pods = {object<Pod>("new", [](Pod& p) { p.node_name = "node-a"; })};
    relisted.services = {service("ignored", 81)};  // not of the replaced kind
    store.replace(Kind::kPod, std::move(relisted));
    auto snapshot = store.snapshot();
    CHECK(snapshot->pods().size() == 1);
    CHECK(snapshot->pods().find(ObjectKey{"default", "new"}));
    CHECK(snapshot->service_count() == 1);
    CHECK_FALSE(snapshot->find_service({"default", "ignored"}));
    REQUIRE(seen.size() == 2);
    for (const auto& change : seen) CHECK(change.kind == Kind::kPod);
}
