// dns_zone_bench: how long a zone rebuild takes (the work done off the
// serving path after each Store change), in full and derived from the last
// zone after one Service changed, and how fast the resolver answers without
// sockets. Prints figures; asserts nothing.
//
// Usage: dns_zone_bench [SERVICES [ENDPOINTS]] (default 10000 Services, a
// tenth of them headless with 10 ready endpoints each; the others ClusterIP
// with ENDPOINTS ready endpoints each, default 0, which bring a PTR each)
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "dns/zone/resolver.h"
#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"
#include "watch/store.h"

int main(int argc, char** argv) {
    using namespace sb;
    using Clock = std::chrono::steady_clock;
    int services = argc > 1 ? std::stoi(argv[1]) : 10000;
    int cluster_ip_endpoints = argc > 2 ? std::stoi(argv[2]) : 0;
    watch::SnapshotBuilder snapshot;
    snapshot.synced(true);
    for (int i = 0; i < services; ++i) {
        watch::Service s;
        s.meta.ns = "ns" + std::to_string(i % 50);
        s.meta.name = "svc" + std::to_string(i);
        s.ports = {watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0}};
        if (i % 10 == 0) {
            s.headless = true;
            watch::EndpointSlice slice;
            slice.meta.ns = s.meta.ns;
            slice.meta.name = s.meta.name + "-x";
            slice.service_name = s.meta.name;
            for (int k = 0; k < 10; ++k) {
                watch::Endpoint e;
                e.addresses = {IpAddress::v4(0x0af40000u + static_cast<uint32_t>(i * 10 + k))};
                e.hostname = s.meta.name + "-" + std::to_string(k);
                slice.endpoints.push_back(e);
            }
            slice.ports = {watch::EndpointPort{"http", watch::Protocol::kTCP, 8080}};
            snapshot.add(slice);
        } else {
            s.cluster_ips = {IpAddress::v4(0x0a600000u + static_cast<uint32_t>(i))};
            if (cluster_ip_endpoints > 0) {
                watch::EndpointSlice slice;
                slice.meta.ns = s.meta.ns;
                slice.meta.name = s.meta.name + "-x";
                slice.service_name = s.meta.name;
                for (int k = 0; k < cluster_ip_endpoints; ++k) {
                    watch::Endpoint e;
                    e.addresses = {IpAddress::v4(
                        0x0b000000u + static_cast<uint32_t>(i * cluster_ip_endpoints + k))};
                    slice.endpoints.push_back(e);
                }
                slice.ports = {watch::EndpointPort{"http", watch::Protocol::kTCP, 8080}};
                snapshot.add(slice);
            }
        }
        snapshot.add(s);
    }
    auto built = snapshot.build();
    // The heap the zone keeps (glibc's in-use bytes, chunk headers included).
    size_t heap_before = mallinfo2().uordblks;
    auto start = Clock::now();
    auto zone = dns::Zone::build(*built, dns::ZoneConfig{});
    double build = std::chrono::duration<double>(Clock::now() - start).count();
    if (!zone) return 1;
    double heap = static_cast<double>(mallinfo2().uordblks - heap_before) / 1e6;
    std::printf(
        "zone build: %d services (%d headless x 10 endpoints, the others x %d), %zu names, %.1f "
        "ms, "
        "%.1f MB heap\n",
        services, services / 10, cluster_ip_endpoints, (*zone)->name_count(), build * 1000, heap);

    // One Service changed, through a Store (its change list): a headless
    // one gains an endpoint, a ClusterIP one moves its address, in turn.
    watch::Store store;
    store.set_synced(true);
    std::vector<watch::Change> pending;
    store.subscribe([&pending](const std::vector<watch::Change>& changes) {
        pending.insert(pending.end(), changes.begin(), changes.end());
    });
    for (const auto& [key, entry] : built->services()) {
        store.upsert(*entry->service);
        for (const auto& slice : entry->slices) store.upsert(*slice);
    }
    auto current = *dns::Zone::build(*store.snapshot(), dns::ZoneConfig{});
    pending.clear();
    const int changes = 200;
    double updating = 0;
    for (int c = 0; c < changes; ++c) {
        int i = (c * 37) % services;
        const auto* entry =
            built->service({"ns" + std::to_string(i % 50), "svc" + std::to_string(i)});
        if (entry->service->headless) {
            watch::EndpointSlice slice = *entry->slices.front();
            watch::Endpoint e = slice.endpoints.front();
            e.addresses = {IpAddress::v4(0x0af80000u + static_cast<uint32_t>(c))};
            e.hostname = "extra" + std::to_string(c);
            slice.endpoints.push_back(e);
            store.upsert(slice);
        } else {
            watch::Service s = *entry->service;
            s.cluster_ips = {IpAddress::v4(0x0a700000u + static_cast<uint32_t>(c))};
            store.upsert(s);
        }
        auto snapshot = store.snapshot();
        start = Clock::now();
        current = current->update(*snapshot, std::exchange(pending, {}));
        updating += std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::printf("zone update, one Service changed: %.3f ms (mean of %d)\n",
                updating / changes * 1000, changes);

    // The fixed part of every update: copying the zone's tables, redoing
    // the apex, and dropping the previous zone.
    auto unchanged = store.snapshot();
    start = Clock::now();
    for (int c = 0; c < changes; ++c) current = current->update(*unchanged, {});
    double fixed = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("zone update, no change (copy, apex, drop): %.3f ms (mean of %d)\n",
                fixed / changes * 1000, changes);

    // Publish after programming (docs/dns.md): what a node's DNS adds to a
    // sync. The first report after a start names every ClusterIP Service;
    // then each accepted sync names the Services it programmed (one here,
    // withdrawn and programmed again in turn).
    dns::ZoneConfig gated;
    gated.publish_after_programming = true;
    dns::ProgrammedServices programmed;
    auto held = *dns::Zone::build(*store.snapshot(), gated, &programmed);
    dns::ProgrammedChanges everything;
    for (const auto& [key, entry] : store.snapshot()->services()) {
        if (!entry->service || entry->service->cluster_ips.empty()) continue;
        auto state = std::make_shared<dns::ProgrammedService>();
        state->cluster_ips = entry->service->cluster_ips;
        state->ports = {dns::ProgrammedPort{"http", watch::Protocol::kTCP, 80}};
        everything.emplace_back(key, std::move(state));
    }
    auto report = [&](const dns::ProgrammedChanges& changes) {
        std::vector<watch::Change> named;
        for (auto& key : programmed.apply(changes)) {
            named.push_back(watch::Change{watch::Kind::kService, key, key});
        }
        held = held->update(*store.snapshot(), named, &programmed);
    };
    start = Clock::now();
    report(everything);
    double first_report = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("publish after programming: first report (%zu Services): %.1f ms\n",
                everything.size(), first_report * 1000);
    double reporting = 0;
    for (int c = 0; c < changes; ++c) {
        const auto& [key, state] = everything[static_cast<size_t>(c * 37) % everything.size()];
        start = Clock::now();
        report({{key, nullptr}});  // withdrawn before a sync
        report({{key, state}});    // programmed again after it
        reporting += std::chrono::duration<double>(Clock::now() - start).count();
    }
    std::printf("publish after programming: one Service's report: %.3f ms (mean of %d)\n",
                reporting / (2 * changes) * 1000, 2 * changes);

    // A Service's A record, then the reverse name of a headless endpoint
    // (Service 0's first), whose PTR the zone writes when asked.
    auto resolve_rounds = [&zone](const char* label, const std::string& name, uint16_t qtype) {
        dns::Message query;
        query.questions.push_back({*dns::name_from_text(name), qtype, dns::kClassIN});
        const int rounds = 200000;
        auto start = Clock::now();
        size_t bytes = 0;
        for (int i = 0; i < rounds; ++i) {
            dns::Resolution r = dns::resolve(zone->get(), query, {});
            bytes += dns::write_message(r.response).bytes.size();
        }
        double resolve = std::chrono::duration<double>(Clock::now() - start).count();
        std::printf("resolve+write (uncached path), %s: %.0f ns per query (%zu bytes)\n", label,
                    resolve / rounds * 1e9, bytes / rounds);
    };
    resolve_rounds("a Service's A", "svc1.ns1.svc.cluster.local", dns::type::kA);
    resolve_rounds("an endpoint's PTR", "0.0.244.10.in-addr.arpa", dns::type::kPTR);
    return 0;
}
