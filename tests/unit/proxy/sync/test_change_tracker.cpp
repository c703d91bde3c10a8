// ChangeTracker: which Services changed, equal round trips dropped, and
// incremental planning equal to a full build_plan.
#include <catch.hpp>

#include "base/timestamp.h"
#include "proxy/sync/change_tracker.h"
#include "proxy/sync/planner.h"
#include "rules/port_changes.h"

using namespace sb;
using namespace sb::proxy;
using sb::watch::ObjectKey;

namespace {

// The trackers' start; trigger times before it are not reported.
const auto kStarted = std::chrono::system_clock::time_point{} + std::chrono::hours(480000);

watch::Service make_service(const std::string& ns, const std::string& name, const char* ip,
                            uint16_t port = 80) {
    watch::Service service;
    service.meta.ns = ns;
    service.meta.name = name;
    service.cluster_ips = {*IpAddress::parse(ip)};
    service.ip_families = {IpFamily::kV4};
    service.has_selector = true;
    watch::ServicePort service_port;
    service_port.name = "http";
    service_port.port = port;
    service_port.target_port.number = 8080;
    service.ports = {service_port};
    return service;
}

watch::EndpointSlice make_slice(const std::string& ns, const std::string& name,
                                const std::string& service, std::vector<const char*> ips,
                                const std::string& node = "node-a") {
    watch::EndpointSlice slice;
    slice.meta.ns = ns;
    slice.meta.name = name;
    slice.service_name = service;
    for (const char* ip : ips) {
        watch::Endpoint endpoint;
        endpoint.addresses = {*IpAddress::parse(ip)};
        endpoint.node_name = node;
        slice.endpoints.push_back(endpoint);
    }
    watch::EndpointPort port;
    port.name = "http";
    port.port = 8080;
    slice.ports = {port};
    return slice;
}

struct Fixture {
    watch::Store store;
    ChangeTracker tracker{"node-a", kStarted};
    Fixture() {
        store.subscribe(
            [this](const std::vector<watch::Change>& changes) { tracker.record(changes); });
    }
    ChangeTracker::Batch take(bool full = false) { return tracker.take(store, full); }
};

std::vector<ObjectKey> keys(const ChangeTracker::Batch& batch) {
    std::vector<ObjectKey> result;
    for (const auto& change : batch.services) result.push_back(change.key);
    return result;
}

}  // namespace

TEST_CASE("changed Services are reported once, with previous and current inputs") {
    Fixture f;
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.1"}));
    f.store.upsert(make_service("ns", "b", "10.0.0.2"));
    auto batch = f.take();
    CHECK(keys(batch) == std::vector<ObjectKey>{{"ns", "a"}, {"ns", "b"}});
    CHECK_FALSE(batch.services[0].previous.service);
    REQUIRE(batch.services[0].current.service);
    CHECK(batch.services[0].current.slices.size() == 1);
    CHECK(f.take().services.empty());

    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.1", "10.1.0.2"}));
    batch = f.take();
    REQUIRE(keys(batch) == std::vector<ObjectKey>{{"ns", "a"}});
    CHECK(batch.services[0].previous.slices[0]->endpoints.size() == 1);
    CHECK(batch.services[0].current.slices[0]->endpoints.size() == 2);
}

TEST_CASE("a change reverted before the sync is dropped") {
    Fixture f;
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.take();
    f.store.upsert(make_service("ns", "a", "10.0.0.1", 81));
    f.store.upsert(make_service("ns", "a", "10.0.0.1", 80));
    CHECK(f.take().services.empty());
    // Add-then-delete of a Service never synced is dropped too.
    f.store.upsert(make_service("ns", "tmp", "10.0.0.9"));
    f.store.remove(watch::Kind::kService, {"ns", "tmp"});
    CHECK(f.take().services.empty());
}

TEST_CASE("deletions, slice label moves and this Node are tracked") {
    Fixture f;
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.store.upsert(make_service("ns", "b", "10.0.0.2"));
    f.store.upsert(make_slice("ns", "s", "a", {"10.1.0.1"}));
    f.take();

    f.store.upsert(make_slice("ns", "s", "b", {"10.1.0.1"}));  // moves from a to b
    CHECK(keys(f.take()) == std::vector<ObjectKey>{{"ns", "a"}, {"ns", "b"}});

    f.store.remove(watch::Kind::kService, {"ns", "a"});
    auto batch = f.take();
    REQUIRE(keys(batch) == std::vector<ObjectKey>{{"ns", "a"}});
    CHECK(batch.services[0].previous.service);
    CHECK_FALSE(batch.services[0].current.service);

    watch::Node other;
    other.meta.name = "node-b";
    f.store.upsert(other);
    CHECK_FALSE(f.take().node_changed);
    watch::Node self;
    self.meta.name = "node-a";
    self.meta.labels[watch::kZoneLabel] = "z1";
    f.store.upsert(self);
    CHECK(f.take().node_changed);
}

TEST_CASE("record() tells whether a batch concerns the proxy") {
    ChangeTracker tracker("node-a", kStarted);
    CHECK(tracker.record({{watch::Kind::kService, {"ns", "a"}, {"ns", "a"}}}));
    CHECK_FALSE(tracker.record({{watch::Kind::kEndpointSlice, {"ns", "orphan"}, {}}}));
    CHECK_FALSE(tracker.record({{watch::Kind::kNode, {"", "node-b"}, {}}}));
    CHECK(tracker.record({{watch::Kind::kNode, {"", "node-a"}, {}}}));
    CHECK_FALSE(tracker.record({}));
}

TEST_CASE("Pod changes never concern the proxy") {
    ChangeTracker tracker("node-a", kStarted);
    // Even one naming a Service or this node's name: Pods feed DNS only.
    CHECK_FALSE(tracker.record({{watch::Kind::kPod, {"ns", "a"}, {"ns", "a"}}}));
    CHECK_FALSE(tracker.record({{watch::Kind::kPod, {"", "node-a"}, {}}}));
    CHECK(tracker.pending().services == 0);

    Fixture f;
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.take();
    bool relevant = true;
    f.store.subscribe(
        [&](const std::vector<watch::Change>& changes) { relevant = f.tracker.record(changes); });
    watch::Pod pod;
    pod.meta.ns = "ns";
    pod.meta.name = "a";
    pod.node_name = "node-a";
    pod.pod_ips = {*IpAddress::parse("10.1.0.1")};
    f.store.upsert(pod);
    CHECK_FALSE(relevant);
    auto batch = f.take();
    CHECK(batch.services.empty());
    CHECK_FALSE(batch.node_changed);
}

TEST_CASE("a full take resets the baseline and lists nothing") {
    Fixture f;
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    CHECK(f.take(true).services.empty());
    CHECK(f.take().services.empty());
    f.store.upsert(make_service("ns", "a", "10.0.0.1", 81));
    CHECK(f.take().services.size() == 1);
}

TEST_CASE("incremental planning equals build_plan after every step") {
    Fixture f;
    const PlannerOptions options{"node-a"};
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.store.upsert(make_service("ns", "c", "10.0.0.3"));
    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.1"}));
    f.store.upsert(make_slice("ns", "c-1", "c", {"10.1.0.3"}, "node-b"));
    f.take(true);
    rules::Plan plan = build_plan(*f.store.snapshot(), options);
    REQUIRE(plan.services.size() == 2);

    auto step = [&](const char* what, auto&& mutate) {
        mutate();
        auto batch = f.tracker.take(f.store, false);
        const rules::Plan before = plan;
        plan = apply_incremental(plan, batch.services, *batch.snapshot, options);
        INFO(what);
        CHECK(plan == build_plan(*batch.snapshot, options));
        // The change set names the replanned Services against the plan it
        // came from, and the comparison it drives finds what a walk finds.
        REQUIRE(plan.changes);
        CHECK(plan.changes->base_revision == before.revision);
        CHECK(plan.changes->services.size() == batch.services.size());
        rules::Plan walked = plan;
        walked.changes.reset();
        CHECK(rules::changed_ports(before, plan)->size() ==
              rules::changed_ports(before, walked)->size());
    };
    step("add a Service sorting between others",
         [&] { f.store.upsert(make_service("ns", "b", "10.0.0.2")); });
    step("give it endpoints", [&] { f.store.upsert(make_slice("ns", "b-1", "b", {"10.1.0.2"})); });
    step("change a port", [&] { f.store.upsert(make_service("ns", "a", "10.0.0.1", 8000)); });
    step("add a namespace sorting first",
         [&] { f.store.upsert(make_service("a-ns", "z", "10.0.0.9")); });
    step("give a middle Service a second port", [&] {
        auto service = make_service("ns", "b", "10.0.0.2");
        auto second = service.ports[0];
        second.name = "https";
        second.port = 443;
        service.ports.push_back(second);
        f.store.upsert(service);
    });
    step("change that two-port Service and its neighbours at once", [&] {
        f.store.upsert(make_service("ns", "a", "10.0.0.1", 8001));
        f.store.upsert(make_slice("ns", "b-1", "b", {"10.1.0.2", "10.1.0.5"}));
        f.store.upsert(make_service("ns", "c", "10.0.0.3", 9000));
        f.store.upsert(make_service("zz", "last", "10.0.0.99"));
    });
    step("remove a Service", [&] { f.store.remove(watch::Kind::kService, {"ns", "c"}); });
    step("remove a slice", [&] { f.store.remove(watch::Kind::kEndpointSlice, {"ns", "a-1"}); });
    CHECK(plan.services.size() == 5);
}

TEST_CASE("pending counts Service and EndpointSlice changes until the next take") {
    Fixture f;
    CHECK(f.tracker.pending().services == 0);
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.store.upsert(make_service("ns", "a", "10.0.0.1", 81));  // the same Service again
    f.store.upsert(make_service("ns", "b", "10.0.0.2"));
    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.1"}));
    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.2"}));  // each slice change counts
    CHECK(f.tracker.pending().services == 2);
    CHECK(f.tracker.pending().endpoint_slices == 2);
    f.take();
    CHECK(f.tracker.pending().services == 0);
    CHECK(f.tracker.pending().endpoint_slices == 0);
    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.3"}));
    CHECK(f.tracker.pending().endpoint_slices == 1);
    f.take(true);  // a full take clears them too
    CHECK(f.tracker.pending().endpoint_slices == 0);
}

TEST_CASE("a batch carries the trigger times of the slices that changed in it") {
    using namespace std::chrono_literals;
    auto annotated = [](const char* name, const char* ip, const std::string& time) {
        auto slice = make_slice("ns", name, "a", {ip});
        slice.meta.annotations[watch::kLastChangeTriggerTimeAnnotation] = time;
        return slice;
    };
    const std::string t1 = format_rfc3339_nano(kStarted + 10s);
    const std::string t2 = format_rfc3339_nano(kStarted + 20s + 500ms);
    Fixture f;
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.store.upsert(annotated("a-1", "10.1.0.1", t1));
    f.store.upsert(annotated("a-2", "10.1.0.2", t1));
    auto batch = f.take(true);  // full takes report them too
    CHECK(batch.trigger_times == std::vector{kStarted + 10s, kStarted + 10s});

    // Only the slice that changed; an unchanged neighbour is not reported again.
    f.store.upsert(annotated("a-1", "10.1.0.9", t2));
    batch = f.take();
    CHECK(batch.trigger_times == std::vector{kStarted + 20s + 500ms});
    CHECK(f.take().trigger_times.empty());

    // Before the tracker started, unparsable, absent, or deleted: not reported.
    f.store.upsert(annotated("a-1", "10.1.0.8", format_rfc3339_nano(kStarted - 1s)));
    f.store.upsert(annotated("a-2", "10.1.0.7", "yesterday"));
    f.store.upsert(make_slice("ns", "a-3", "a", {"10.1.0.6"}));
    CHECK(f.take().trigger_times.empty());
    f.store.remove(watch::Kind::kEndpointSlice, {"ns", "a-1"});
    CHECK(f.take().trigger_times.empty());
}

TEST_CASE("a full replan reusing the previous plan shares what did not change") {
    Fixture f;
    const PlannerOptions options{"node-a"};
    f.store.upsert(make_service("ns", "a", "10.0.0.1"));
    f.store.upsert(make_service("ns", "b", "10.0.0.2"));
    f.store.upsert(make_service("ns", "c", "10.0.0.3"));
    f.store.upsert(make_slice("ns", "a-1", "a", {"10.1.0.1"}));
    f.store.upsert(make_slice("ns", "b-1", "b", {"10.1.0.2"}));
    const rules::Plan before = build_plan(*f.store.snapshot(), options);
    REQUIRE(before.services.size() == 3);

    f.store.upsert(make_slice("ns", "b-1", "b", {"10.1.0.2", "10.1.0.5"}));
    f.store.remove(watch::Kind::kService, {"ns", "c"});
    f.store.upsert(make_service("ns", "d", "10.0.0.4"));
    const rules::Plan reused = build_plan(*f.store.snapshot(), options, &before);
    const rules::Plan fresh = build_plan(*f.store.snapshot(), options);
    CHECK(reused == fresh);
    REQUIRE(reused.services.size() == 3);
    CHECK(reused.services.entry(0) == before.services.entry(0));  // a: unchanged, shared
    CHECK(reused.services.entry(1) != before.services.entry(1));  // b: a new endpoint
    CHECK(reused.services[1].cluster_endpoints.size() == 2);
    CHECK(reused.services[2].service == "d");
    CHECK(fresh.services.entry(0) != before.services.entry(0));  // without reuse: copies
}

namespace {

watch::ServiceCIDR make_service_cidr(const std::string& name, std::vector<const char*> cidrs) {
    watch::ServiceCIDR object;
    object.meta.name = name;
    for (const char* cidr : cidrs) object.cidrs.push_back(*Prefix::parse(cidr));
    return object;
}

std::vector<std::string> texts(const std::vector<Prefix>& prefixes) {
    std::vector<std::string> out;
    for (const Prefix& prefix : prefixes) out.push_back(prefix.to_string());
    return out;
}

}  // namespace

TEST_CASE("ServiceCIDRs reach the plan as one sorted, unique list, incrementally too") {
    Fixture f;
    const PlannerOptions options{"node-a"};
    f.store.upsert(make_service("ns", "a", "10.96.0.1"));
    f.take(true);
    rules::Plan plan = build_plan(*f.store.snapshot(), options);
    CHECK(plan.service_cidrs.empty());  // none known: nothing to drop for

    // A ServiceCIDR alone is a change the proxy syncs for, with no Service.
    f.store.upsert(make_service_cidr("kubernetes", {"fd00:96::/112", "10.96.0.0/16"}));
    f.store.upsert(make_service_cidr("extra", {"10.100.0.0/24"}));
    f.store.upsert(make_service_cidr("same", {"10.96.0.0/16"}));
    auto batch = f.take();
    CHECK(batch.service_cidrs_changed);
    CHECK(batch.services.empty());
    plan = apply_incremental(plan, batch.services, *batch.snapshot, options);
    CHECK(texts(plan.service_cidrs) ==
          std::vector<std::string>{"10.96.0.0/16", "10.100.0.0/24", "fd00:96::/112"});
    CHECK(plan == build_plan(*batch.snapshot, options));
    CHECK(plan.services.size() == 1);

    CHECK_FALSE(f.take().service_cidrs_changed);
    f.store.remove(watch::Kind::kServiceCIDR, {"", "kubernetes"});
    batch = f.take();
    CHECK(batch.service_cidrs_changed);
    plan = apply_incremental(plan, batch.services, *batch.snapshot, options);
    CHECK(texts(plan.service_cidrs) == std::vector<std::string>{"10.96.0.0/16", "10.100.0.0/24"});
    CHECK(plan == build_plan(*batch.snapshot, options));
}
