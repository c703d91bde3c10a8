// The reflector (watch/kube/reflector.h) against scripted API answers
// (fake_api.h): pagination, watch resume points, bookmarks, 410 Gone,
// ERROR events, backoff, bad lines and the synced flag. No sockets, no root,
// no sleeping.

// boost/asio/awaitable.hpp uses std::exchange without including it.
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <catch.hpp>

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/exposition.h"
#include "tests/unit/watch/kube/fake_api.h"
#include "watch/kube/reflector.h"
#include "watch/kube/resources.h"

using namespace sb;
using namespace sb::watch;
using namespace sb::watch::kube;
using namespace sb::watch::kube::testing;
using namespace std::chrono_literals;

namespace {

const ResourceSpec kServices{"services", Kind::kService, "/api/v1/services", ""};
const ResourceSpec kSlices{"endpointslices", Kind::kEndpointSlice,
                           "/apis/discovery.k8s.io/v1/endpointslices", ""};

std::string service(const std::string& name, const std::string& rv, int port = 80) {
    return R"({"kind":"Service","metadata":{"name":")" + name +
           R"(","namespace":"default","resourceVersion":")" + rv +
           R"("},"spec":{"ports":[{"port":)" + std::to_string(port) + "}]}}";
}

std::string service_list(const std::string& rv, const std::vector<std::string>& items,
                         const std::string& continue_token = "") {
    std::string out = R"({"kind":"ServiceList","metadata":{"resourceVersion":")" + rv +
                      R"(","continue":")" + continue_token + R"("},"items":[)";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]}";
}

std::string event(const std::string& type, const std::string& object) {
    return R"({"type":")" + type + R"(","object":)" + object + "}";
}

std::string bookmark(const std::string& rv) {
    return event("BOOKMARK", R"({"kind":"Service","metadata":{"resourceVersion":")" + rv + "\"}}");
}

std::string error_event(int code) {
    return event("ERROR", R"({"kind":"Status","code":)" + std::to_string(code) +
                              R"(,"message":"scripted"})");
}

// One reflector over fake APIs, one per resource. The reflector stops once
// every resource's script ran out.
struct Bed {
    explicit Bed(std::vector<ResourceSpec> specs, KubeTuning tuning = {})
        : reflector(store, "https://fake", tuning, 42, clock,
                    [this](const ResourceSpec& spec) { return apis.at(spec.name)->transport(); }) {
        for (const auto& spec : specs) {
            auto api = std::make_unique<FakeApi>(clock);
            api->on_exhausted = [this, name = spec.name] {
                exhausted.insert(name);
                if (exhausted.size() == apis.size()) reflector.stop();
            };
            apis[spec.name] = std::move(api);
            reflector.add_resource(spec);
        }
        store.subscribe([this](const std::vector<Change>& batch) {
            changes.insert(changes.end(), batch.begin(), batch.end());
        });
    }

    FakeApi& api(const std::string& name) { return *apis.at(name); }

    void run() {
        boost::asio::io_context io;
        for (size_t i = 0; i < reflector.resource_count(); ++i) {
            boost::asio::co_spawn(io, reflector.run(i), [](std::exception_ptr error) {
                if (error) std::rethrow_exception(error);
            });
        }
        io.run();
        for (const auto& [name, api] : apis) CHECK(api->mismatches.empty());
    }

    double metric(const std::string& series) {
        metrics::TextWriter out;
        reflector.append_metrics(out);
        auto exposition = sb::testing::parse_exposition(out.text());
        return exposition.value(series).value_or(0);
    }

    std::set<std::string> service_names() {
        std::set<std::string> names;
        for (const auto& [key, entry] : store.snapshot()->services()) {
            if (entry->service) names.insert(key.name);
        }
        return names;
    }

    Store store;
    FakeClock clock;
    std::map<std::string, std::unique_ptr<FakeApi>> apis;
    std::set<std::string> exhausted;
    std::vector<Change> changes;
    Reflector reflector;
};

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// The wait after failure `failure` of a series (0 for the first): 500 ms
// doubling up to 30 s, jittered into [d/2, d].
void check_wait(Millis sleep, unsigned failure) {
    const Millis nominal = Backoff::nominal(BackoffParams{}, failure);
    INFO("failure " << failure << ": slept " << sleep.count() << " ms, nominal " << nominal.count()
                    << " ms");
    CHECK(sleep >= nominal / 2);
    CHECK(sleep <= nominal);
}

Step cut_watch(std::vector<std::string> lines, Millis lasts) {
    return watch_stream(std::move(lines), lasts, StreamEnd::How::kLost);
}

}  // namespace

TEST_CASE("the reflector follows continue tokens, then watches from the list's resourceVersion") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    bool ready_while_watching = false;
    Step second_watch = watch_stream({});
    second_watch.before = [&] { ready_while_watching = bed.reflector.ready(); };
    api.script({
        list_page(service_list("", {service("a", "3"), service("b", "4")}, "next page")),
        list_page(service_list("20", {service("c", "5")})),
        watch_stream({event("ADDED", service("d", "21"))}),
        second_watch,
    });
    bed.run();

    REQUIRE(api.requests.size() >= 4);
    CHECK(api.requests[0] == "LIST /api/v1/services?limit=500");
    CHECK(api.requests[1] == "LIST /api/v1/services?limit=500&continue=next%20page");
    CHECK(has(api.requests[2], "WATCH /api/v1/services?watch=true&allowWatchBookmarks=true"));
    CHECK(has(api.requests[2], "&resourceVersion=20"));
    // The watch the server ended resumes from the last event's version.
    CHECK(has(api.requests[3], "&resourceVersion=21"));
    CHECK(bed.service_names() == std::set<std::string>{"a", "b", "c", "d"});
    CHECK(bed.store.snapshot()->synced());
    CHECK(ready_while_watching);
    CHECK(bed.clock.sleeps.empty());
    CHECK(bed.metric(R"(switchboard_apiserver_requests_total{resource="services",code="200"})") ==
          4);
}

TEST_CASE("410 Gone on a continue page starts the list over from the first page") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("", {service("a", "3")}, "token")),
        answer(Step::Request::kList, 410, R"({"kind":"Status","code":410})"),
        list_page(service_list("30", {service("a", "3"), service("b", "7")})),
    });
    bed.run();

    REQUIRE(api.requests.size() >= 3);
    CHECK(api.requests[2] == "LIST /api/v1/services?limit=500");
    CHECK(has(api.requests[3], "&resourceVersion=30"));
    CHECK(bed.metric(R"(switchboard_watch_relists_total{resource="services"})") == 1);
    CHECK(api.disconnects >= 1);
    CHECK(bed.clock.sleeps.empty());  // a relist does not back off
    // The pages before the 410 never reached the Store: one replace, two adds.
    CHECK(bed.changes.size() == 2);
    CHECK(bed.service_names() == std::set<std::string>{"a", "b"});
}

TEST_CASE("a bookmark moves the resume point and changes nothing in the Store") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("10", {service("a", "3")})),
        watch_stream({bookmark("15")}),
        watch_stream({}),
    });
    bed.run();

    REQUIRE(api.requests.size() >= 3);
    CHECK(has(api.requests[1], "&resourceVersion=10"));
    CHECK(has(api.requests[2], "&resourceVersion=15"));
    CHECK(bed.changes.size() == 1);  // the listed Service only
    CHECK(bed.metric(R"(switchboard_watch_events_total{resource="services",type="BOOKMARK"})") ==
          1);
}

TEST_CASE("410 Gone during a watch relists, and the Store sees only the differences") {
    // As an ERROR event, and as the HTTP status of the WATCH.
    const bool as_event = GENERATE(true, false);
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("10", {service("a", "1"), service("b", "2"), service("c", "3")})),
        as_event ? watch_stream({error_event(410), event("ADDED", service("late", "11"))})
                 : answer(Step::Request::kWatch, 410, R"({"kind":"Status","code":410})"),
        list_page(
            service_list("50", {service("a", "1"), service("b", "40", 81), service("d", "41")})),
    });
    bed.run();

    REQUIRE(api.requests.size() >= 4);
    CHECK(api.requests[2] == "LIST /api/v1/services?limit=500");
    CHECK(has(api.requests[3], "&resourceVersion=50"));
    CHECK(bed.metric(R"(switchboard_watch_relists_total{resource="services"})") == 1);
    CHECK(bed.service_names() == std::set<std::string>{"a", "b", "d"});
    CHECK(bed.store.snapshot()->find_service({"default", "b"})->ports[0].port == 81);
    // 3 from the first list; then b changed, c deleted, d added; a untouched.
    REQUIRE(bed.changes.size() == 6);
    std::set<std::string> relisted;
    for (size_t i = 3; i < bed.changes.size(); ++i) relisted.insert(bed.changes[i].key.name);
    CHECK(relisted == std::set<std::string>{"b", "c", "d"});
    CHECK(bed.clock.sleeps.empty());
}

TEST_CASE("an ERROR event other than 410 backs off and resumes the watch without a relist") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("10", {})),
        watch_stream({event("ADDED", service("x", "11")), error_event(500),
                      event("ADDED", service("after-error", "12"))}),
        watch_stream({}),
    });
    bed.run();

    REQUIRE(api.requests.size() >= 3);
    CHECK(has(api.requests[2], "WATCH "));
    CHECK(has(api.requests[2], "&resourceVersion=11"));
    // What followed the ERROR on the same stream was not applied.
    CHECK(bed.service_names() == std::set<std::string>{"x"});
    REQUIRE(bed.clock.sleeps.size() >= 1);
    CHECK(bed.clock.sleeps[0] >= 250ms);
    CHECK(bed.clock.sleeps[0] <= 500ms);
    CHECK(bed.metric(R"(switchboard_apiserver_reconnects_total{resource="services"})") >= 1);
    CHECK(bed.metric(R"(switchboard_watch_relists_total{resource="services"})") == 0);
}

TEST_CASE("a watch that ends at once, with no event, backs off; a full one resets the backoff") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("10", {})),
        watch_stream({}, 0ms),
        watch_stream({}, 0ms),
        watch_stream({}, 0ms),
        watch_stream({}, 300s),
        watch_stream({}, 0ms),
    });
    bed.run();

    REQUIRE(bed.clock.sleeps.size() >= 4);
    for (unsigned i = 0; i < 3; ++i) check_wait(bed.clock.sleeps[i], i);
    check_wait(bed.clock.sleeps[3], 0);
    for (size_t i = 1; i < api.requests.size(); ++i) CHECK_FALSE(has(api.requests[i], "LIST"));
}

TEST_CASE("a watch cut after running healthy reconnects after the initial backoff") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("10", {})),
        // Four fast failures grow the backoff to 4 s ...
        cut_watch({}, 0ms),
        answer(Step::Request::kWatch, 500),
        no_answer(Step::Request::kWatch, false, "cannot connect: refused"),
        cut_watch({bookmark("11")}, 2s),  // delivered, but failed within seconds
        // ... then a watch streams for a minute and the connection is cut: the
        // reconnect waits the initial delay, not 8 s.
        cut_watch({event("ADDED", service("a", "12")), bookmark("13")}, 60s),
        // A new series grows from there.
        cut_watch({}, 0ms),
    });
    bed.run();

    REQUIRE(bed.clock.sleeps.size() >= 6);
    for (unsigned i = 0; i < 4; ++i) check_wait(bed.clock.sleeps[i], i);
    check_wait(bed.clock.sleeps[4], 0);
    check_wait(bed.clock.sleeps[5], 1);
    CHECK(has(api.requests[6], "&resourceVersion=13"));  // resumed, no relist
    CHECK(bed.metric(R"(switchboard_watch_relists_total{resource="services"})") == 0);
    CHECK(bed.service_names() == std::set<std::string>{"a"});
}

TEST_CASE("two minutes without a failure start the backoff over, as client-go's reflector") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        list_page(service_list("10", {})),
        cut_watch({}, 0ms),
        cut_watch({}, 0ms),
        cut_watch({}, 0ms),
        // A silent watch (no event, no bookmark) is not healthy: under two
        // minutes since the last failure, the backoff keeps growing ...
        cut_watch({}, 60s),
        // ... over two minutes, it starts over.
        cut_watch({}, 150s),
    });
    bed.run();

    REQUIRE(bed.clock.sleeps.size() >= 5);
    for (unsigned i = 0; i < 4; ++i) check_wait(bed.clock.sleeps[i], i);
    check_wait(bed.clock.sleeps[4], 0);
}

TEST_CASE("fast failures grow the backoff up to the cap; a 410 relist neither waits nor resets") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    std::vector<Step> script = {list_page(service_list("10", {}))};
    for (int i = 0; i < 4; ++i) {
        script.push_back(no_answer(Step::Request::kWatch, false, "cannot connect: refused"));
        script.push_back(cut_watch({}, 0ms));
    }
    script.push_back(answer(Step::Request::kWatch, 410, R"({"kind":"Status","code":410})"));
    script.push_back(list_page(service_list("20", {})));
    for (int i = 0; i < 3; ++i) script.push_back(answer(Step::Request::kWatch, 503));
    api.script(std::move(script));
    bed.run();

    // 0.5, 1, 2, 4, 8, 16, 30, 30 s, then, across the relist, 30 s on.
    REQUIRE(bed.clock.sleeps.size() >= 11);
    for (unsigned i = 0; i < 11; ++i) check_wait(bed.clock.sleeps[i], i);
    CHECK(bed.clock.sleeps[10] >= 15s);
    CHECK(bed.metric(R"(switchboard_watch_relists_total{resource="services"})") == 1);
    CHECK(api.requests[10] == "LIST /api/v1/services?limit=500");
}

TEST_CASE("Retry-After of a 429 replaces the backoff") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        answer(Step::Request::kList, 429, R"({"kind":"Status","message":"slow down"})", "7"),
        list_page(service_list("10", {})),
    });
    bed.run();

    REQUIRE(bed.clock.sleeps.size() >= 1);
    CHECK(bed.clock.sleeps[0] == 7000ms);
    CHECK(bed.metric(R"(switchboard_apiserver_requests_total{resource="services",code="429"})") ==
          1);
}

TEST_CASE("a request that never reached the server is not counted; a lost answer is") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    api.script({
        no_answer(Step::Request::kList, false, "cannot connect: refused"),
        no_answer(Step::Request::kList, true, "end of stream"),
        list_page(service_list("10", {})),
    });
    bed.run();

    CHECK(bed.metric(R"(switchboard_apiserver_requests_total{resource="services",code="error"})") ==
          1);
    CHECK(bed.clock.sleeps.size() >= 2);
    CHECK(bed.store.snapshot()->synced());
}

TEST_CASE("bad watch lines are counted and skipped; the stream goes on") {
    Bed bed({kServices});
    auto& api = bed.api("services");
    Step stream = watch_stream({
        "not json",
        R"({"type":"ADDED"})",
        event(
            "ADDED",
            R"({"kind":"EndpointSlice","metadata":{"name":"s","namespace":"default"},"addressType":"IPv4"})"),
        event("ADDED", service("z", "12")),
        // Fails validation: removed, as a relist would drop it.
        event("MODIFIED", service("a", "13", 0)),
    });
    stream.oversized = 2;
    stream.end.cut = true;  // and the stream ended inside a line
    api.script({
        list_page(service_list("10", {service("a", "3")})),
        stream,
        watch_stream({}),
    });
    bed.run();

    REQUIRE(api.requests.size() >= 3);
    CHECK(has(api.requests[2], "&resourceVersion=13"));
    CHECK(bed.service_names() == std::set<std::string>{"z"});
    // not JSON, no object, another kind, the invalid object, the cut line.
    CHECK(bed.metric(R"(switchboard_watch_decode_errors_total{resource="services"})") == 5);
    CHECK(bed.metric(R"(switchboard_watch_oversized_lines_total{resource="services"})") == 2);
    CHECK(bed.clock.sleeps.empty());
}

TEST_CASE("the Store is synced only once every resource has listed") {
    Bed bed({kServices, kSlices});
    bool synced_before_slices_listed = true;
    bool services_listed_first = false;
    Step failing = answer(Step::Request::kList, 500, "overloaded");
    Step slices =
        list_page(R"({"kind":"EndpointSliceList","metadata":{"resourceVersion":"9"},"items":[]})");
    slices.before = [&] {
        services_listed_first = bed.store.snapshot()->find_service({"default", "a"}) != nullptr;
        synced_before_slices_listed = bed.store.snapshot()->synced();
    };
    bed.api("services").script({list_page(service_list("10", {service("a", "3")}))});
    bed.api("endpointslices").script({failing, slices});
    bed.run();

    CHECK(services_listed_first);
    CHECK_FALSE(synced_before_slices_listed);
    CHECK(bed.store.snapshot()->synced());
    // No watch stayed established: not ready, although synced.
    CHECK_FALSE(bed.reflector.ready());
}

namespace {

std::string pod(const std::string& name, const std::string& rv, const std::string& ip) {
    return R"({"kind":"Pod","metadata":{"name":")" + name +
           R"(","namespace":"shop","resourceVersion":")" + rv +
           R"(","labels":{"app":"web"}},"spec":{"nodeName":"node-a"},)"
           R"("status":{"phase":"Running","podIPs":[{"ip":")" +
           ip + R"("}]}})";
}

std::string pod_list(const std::string& rv, const std::vector<std::string>& items) {
    std::string out =
        R"({"kind":"PodList","metadata":{"resourceVersion":")" + rv + R"("},"items":[)";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]}";
}

const ResourceSpec* find_resource(const std::vector<ResourceSpec>& specs, const std::string& name) {
    for (const auto& spec : specs) {
        if (spec.name == name) return &spec;
    }
    return nullptr;
}

}  // namespace

TEST_CASE("the Pods of this node are watched only when asked, and only with a node name") {
    auto without = kube_resources("node-a", false);
    CHECK(without.size() == 4);
    CHECK_FALSE(find_resource(without, "pods"));

    auto with = kube_resources("node-a", true);
    const ResourceSpec* pods = find_resource(with, "pods");
    REQUIRE(pods);
    CHECK(pods->kind == Kind::kPod);
    CHECK(pods->path == "/api/v1/pods");
    CHECK(pods->field_selector == "spec.nodeName=node-a");
    const ResourceSpec* nodes = find_resource(with, "nodes");
    REQUIRE(nodes);
    CHECK(nodes->field_selector == "metadata.name=node-a");

    // Without a node name the selector would select every Pod of the cluster.
    auto nameless = kube_resources("", true);
    CHECK_FALSE(find_resource(nameless, "pods"));
    CHECK_FALSE(find_resource(nameless, "nodes"));
}

TEST_CASE("the pods resource lists and watches with its field selector into the Store") {
    const ResourceSpec pods = *find_resource(kube_resources("node-a", true), "pods");
    CHECK_FALSE(pods.gates_sync);
    Bed bed({kServices, pods});
    bool synced_before_pods_listed = false;
    Step listed = list_page(pod_list("40", {pod("web-1", "38", "10.244.1.7")}));
    listed.before = [&] { synced_before_pods_listed = bed.store.snapshot()->synced(); };
    bed.api("services").script({list_page(service_list("10", {service("a", "3")}))});
    bed.api("pods").script({
        answer(Step::Request::kList, 503, "starting"),
        listed,
        watch_stream({event("ADDED", pod("web-2", "41", "10.244.1.8")),
                      event("DELETED", pod("web-1", "42", "10.244.1.7")),
                      event("MODIFIED", pod("web-2", "43", "10.244.1.300"))}),
    });
    bed.run();

    auto& api = bed.api("pods");
    REQUIRE(api.requests.size() >= 3);
    CHECK(api.requests[1] == "LIST /api/v1/pods?limit=500&fieldSelector=spec.nodeName%3Dnode-a");
    CHECK(has(api.requests[2], "WATCH /api/v1/pods?watch=true&allowWatchBookmarks=true"));
    CHECK(has(api.requests[2], "&resourceVersion=40&fieldSelector=spec.nodeName%3Dnode-a"));
    // The Pods' failed first LIST (503) held nothing back: they do not gate sync.
    CHECK(synced_before_pods_listed);
    CHECK(bed.store.snapshot()->synced());
    // web-1 listed then deleted; web-2 added, then dropped for its bad address.
    CHECK(bed.store.snapshot()->pods().empty());
    std::vector<ObjectKey> pod_changes;
    for (const auto& change : bed.changes) {
        if (change.kind == Kind::kPod) pod_changes.push_back(change.key);
    }
    CHECK(pod_changes ==
          std::vector<ObjectKey>{
              {"shop", "web-1"}, {"shop", "web-2"}, {"shop", "web-1"}, {"shop", "web-2"}});
    CHECK(bed.metric(R"(switchboard_apiserver_requests_total{resource="pods",code="200"})") == 2);
    CHECK(bed.metric(R"(switchboard_watch_events_total{resource="pods",type="ADDED"})") == 1);
    CHECK(bed.metric(R"(switchboard_watch_decode_errors_total{resource="pods"})") == 1);
}

namespace {

std::string service_cidr(const std::string& name, const std::string& rv, const std::string& cidr) {
    return R"({"kind":"ServiceCIDR","metadata":{"name":")" + name + R"(","resourceVersion":")" +
           rv + R"("},"spec":{"cidrs":[")" + cidr + R"("]}})";
}

std::string service_cidr_list(const std::string& rv, const std::vector<std::string>& items) {
    std::string out =
        R"({"kind":"ServiceCIDRList","metadata":{"resourceVersion":")" + rv + R"("},"items":[)";
    for (size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + items[i];
    return out + "]}";
}

}  // namespace

TEST_CASE("ServiceCIDRs are watched cluster-wide and gate nothing") {
    const auto specs = kube_resources("node-a", false);
    const ResourceSpec* cidrs = find_resource(specs, "servicecidrs");
    REQUIRE(cidrs);
    CHECK(cidrs->kind == Kind::kServiceCIDR);
    CHECK(cidrs->path == "/apis/networking.k8s.io/v1/servicecidrs");
    CHECK(cidrs->field_selector.empty());
    CHECK_FALSE(cidrs->gates_sync);
    CHECK(cidrs->may_be_absent);
}

TEST_CASE("a server without the ServiceCIDR API (404) holds nothing back and is asked again") {
    const ResourceSpec cidrs = *find_resource(kube_resources("node-a", false), "servicecidrs");
    KubeTuning tuning;
    Bed bed({kServices, cidrs}, tuning);
    const std::string not_found = R"({"kind":"Status","code":404,"reason":"NotFound"})";
    bool synced_while_absent = false;
    Step second = answer(Step::Request::kList, 404, not_found);
    second.before = [&] { synced_while_absent = bed.store.snapshot()->synced(); };
    Step served =
        list_page(service_cidr_list("9", {service_cidr("kubernetes", "8", "10.96.0.0/16")}));
    bed.api("services").script({list_page(service_list("10", {service("a", "3")}))});
    bed.api("servicecidrs")
        .script({
            answer(Step::Request::kList, 404, not_found),
            second,
            served,
            watch_stream({event("ADDED", service_cidr("extra", "10", "fd00:96::/112"))}),
            // The API went away (a downgrade): what it served is dropped, and
            // the next request is a LIST.
            answer(Step::Request::kWatch, 404, not_found),
        });
    bed.run();

    CHECK(synced_while_absent);
    // Each 404 waits the backoff cap, never the growing failure backoff.
    CHECK(std::count(bed.clock.sleeps.begin(), bed.clock.sleeps.end(),
                     Millis(tuning.backoff_cap_ms)) >= 3);
    CHECK(bed.metric(
              R"(switchboard_apiserver_requests_total{resource="servicecidrs",code="404"})") == 3);
    // Two added while served, both removed by the last 404.
    size_t cidr_changes = 0;
    for (const Change& change : bed.changes) cidr_changes += change.kind == Kind::kServiceCIDR;
    CHECK(cidr_changes == 4);
    CHECK(bed.store.snapshot()->service_cidrs().size() == 0);
}
