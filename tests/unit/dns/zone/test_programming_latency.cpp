// coredns_kubernetes_dns_programming_duration_seconds: trigger time to zone
// publish, by service_kind, fed by a real Store's change notifications.
#include <catch.hpp>

#include "base/timestamp.h"
#include "dns/zone/programming_latency.h"
#include "tests/unit/exposition.h"

using namespace sb;
using namespace sb::dns;
using namespace std::chrono_literals;

namespace {

const auto kStarted = std::chrono::system_clock::time_point{} + std::chrono::hours(480000);

watch::Service service(const std::string& name, bool headless, bool selector,
                       watch::ServiceType type = watch::ServiceType::kClusterIP) {
    watch::Service s;
    s.meta.ns = "default";
    s.meta.name = name;
    s.headless = headless;
    if (!headless) s.cluster_ips = {*IpAddress::parse("10.96.0.20")};
    s.has_selector = selector;
    s.type = type;
    return s;
}

watch::EndpointSlice slice(const std::string& name, const std::string& service_name,
                           std::optional<std::chrono::system_clock::time_point> triggered) {
    watch::EndpointSlice s;
    s.meta.ns = "default";
    s.meta.name = name;
    s.service_name = service_name;
    s.meta.labels[watch::kServiceNameLabel] = service_name;
    if (triggered) {
        s.meta.annotations[watch::kLastChangeTriggerTimeAnnotation] =
            format_rfc3339_nano(*triggered);
    }
    watch::Endpoint e;
    e.addresses = {*IpAddress::parse("10.244.0.7")};
    s.endpoints = {e};
    return s;
}

struct Fixture {
    watch::Store store;
    std::shared_ptr<ProgrammingLatency> latency = std::make_shared<ProgrammingLatency>(kStarted);
    Fixture() {
        store.subscribe([l = latency](const std::vector<watch::Change>& c) { l->record(c); });
    }
    // One builder cycle published at `now`.
    void build(std::chrono::system_clock::time_point now) {
        auto changed = latency->take();
        latency->observe(changed, *store.snapshot(), now);
    }
    testing::Exposition metrics() const {
        metrics::TextWriter writer;
        latency->append_metrics(writer);
        auto parsed = testing::parse_exposition(writer.text());
        CHECK(parsed.problems.empty());
        return parsed;
    }
};

std::string series(const char* kind, const char* suffix, const char* le = nullptr) {
    std::string s = std::string("coredns_kubernetes_dns_programming_duration_seconds") + suffix +
                    "{service_kind=\"" + kind + "\"";
    if (le) s += std::string(",le=\"") + le + "\"";
    return s + "}";
}

}  // namespace

TEST_CASE("programming latency: one observation per changed slice, by service kind") {
    Fixture f;
    f.store.upsert(service("web", false, true));
    f.store.upsert(service("nginx", true, true));
    f.store.upsert(service("manual", true, false));
    f.store.upsert(service("ext", false, false, watch::ServiceType::kExternalName));
    f.store.upsert(slice("web-1", "web", kStarted + 10s));
    f.store.upsert(slice("nginx-1", "nginx", kStarted + 10s));
    f.store.upsert(slice("manual-1", "manual", kStarted + 10s));
    f.store.upsert(slice("ext-1", "ext", kStarted + 10s));
    f.store.upsert(slice("orphan-1", "gone", kStarted + 10s));  // no such Service
    f.build(kStarted + 10s + 1500ms);

    auto m = f.metrics();
    CHECK(m.families.at("coredns_kubernetes_dns_programming_duration_seconds").type == "histogram");
    for (const char* kind : {"cluster_ip", "headless_with_selector", "headless_without_selector"}) {
        INFO(kind);
        CHECK(m.value(series(kind, "_count")) == 1);
        CHECK(m.value(series(kind, "_sum")).value_or(-1) == Approx(1.5));
        CHECK(m.value(series(kind, "_bucket", "1.024")) == 0);  // 0.001 * 2^10
        CHECK(m.value(series(kind, "_bucket", "2.048")) == 1);
    }
    CHECK(m.samples.size() == 3 * (20 + 1 + 2));  // no series for ExternalName or orphans

    // Nothing changed since: the next build observes nothing.
    f.build(kStarted + 20s);
    CHECK(f.metrics().value(series("cluster_ip", "_count")) == 1);
}

TEST_CASE("programming latency: stale, missing, invalid trigger times and deleted slices") {
    Fixture f;
    f.store.upsert(service("web", false, true));
    f.store.upsert(slice("before-start", "web", kStarted - 1s));
    f.store.upsert(slice("no-annotation", "web", std::nullopt));
    auto invalid = slice("invalid", "web", std::nullopt);
    invalid.meta.annotations[watch::kLastChangeTriggerTimeAnnotation] = "yesterday";
    f.store.upsert(invalid);
    f.store.upsert(slice("deleted", "web", kStarted + 1s));
    f.store.remove(watch::Kind::kEndpointSlice, {"default", "deleted"});
    f.build(kStarted + 2s);
    CHECK_FALSE(f.metrics().value(series("cluster_ip", "_count")));

    // A slice changed while a zone was being built waits for the next one.
    f.store.upsert(slice("later", "web", kStarted + 3s));
    auto changed = f.latency->take();
    auto snapshot = f.store.snapshot();
    f.store.upsert(slice("later", "web", kStarted + 4s));
    f.latency->observe(changed, *snapshot, kStarted + 5s);  // +3s's change: 2 s
    f.build(kStarted + 7s);                                 // +4s's change: 3 s
    auto m = f.metrics();
    CHECK(m.value(series("cluster_ip", "_count")) == 2);
    CHECK(m.value(series("cluster_ip", "_sum")).value_or(-1) == Approx(2 + 3));
}

TEST_CASE("programming latency: the service kinds") {
    CHECK(std::string(ProgrammingLatency::service_kind(service("a", false, true))) == "cluster_ip");
    CHECK(std::string(ProgrammingLatency::service_kind(service("a", false, false))) ==
          "cluster_ip");
    CHECK(std::string(ProgrammingLatency::service_kind(service("a", true, true))) ==
          "headless_with_selector");
    CHECK(std::string(ProgrammingLatency::service_kind(service("a", true, false))) ==
          "headless_without_selector");
}
