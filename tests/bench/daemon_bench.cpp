// The daemon's planning step at scale: a full replan (tracker baseline reset
// + build_plan) against a partial one (one EndpointSlice changed: tracker
// take + apply_incremental), and the Store's cost of one change (upsert +
// snapshot), on SERVICES x ENDPOINTS objects built directly in a Store.
// Prints times (best of the runs); asserts nothing.
//
// Usage: bench_daemon [SERVICES [ENDPOINTS_PER_SERVICE [RUNS]]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "proxy/sync/change_tracker.h"
#include "proxy/sync/planner.h"
#include "rules/plan_json.h"
#include "watch/store.h"

namespace {

using namespace sb;

watch::Service make_service(int index) {
    watch::Service service;
    service.meta.ns = "ns-" + std::to_string(index % 50);
    service.meta.name = "svc-" + std::to_string(index);
    service.cluster_ips = {IpAddress::v4(0x0a600000u + static_cast<uint32_t>(index) + 10)};
    service.ip_families = {IpFamily::kV4};
    service.has_selector = true;
    watch::ServicePort port;
    port.name = "http";
    port.port = 80;
    port.target_port.number = 8080;
    service.ports = {port};
    return service;
}

watch::EndpointSlice make_slice(int index, int endpoints, uint32_t generation) {
    watch::EndpointSlice slice;
    slice.meta.ns = "ns-" + std::to_string(index % 50);
    slice.meta.name = "svc-" + std::to_string(index) + "-abcde";
    slice.meta.resource_version = std::to_string(generation);
    slice.service_name = "svc-" + std::to_string(index);
    for (int e = 0; e < endpoints; ++e) {
        watch::Endpoint endpoint;
        endpoint.addresses = {
            IpAddress::v4(0x0a800000u + static_cast<uint32_t>(index * endpoints + e) + 1)};
        endpoint.node_name = "node-" + std::to_string((index + e) % 10);
        endpoint.ready = generation % 2 == 1 || e != 0;  // flips one endpoint per generation
        slice.endpoints.push_back(endpoint);
    }
    watch::EndpointPort port;
    port.name = "http";
    port.port = 8080;
    slice.ports = {port};
    return slice;
}

template <typename Work>
double best_ms(int runs, Work work) {
    double best = 1e300;
    for (int run = 0; run < runs; ++run) {
        const auto start = std::chrono::steady_clock::now();
        work(run);
        const auto elapsed = std::chrono::steady_clock::now() - start;
        best = std::min(best, std::chrono::duration<double, std::milli>(elapsed).count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const int services = argc > 1 ? std::atoi(argv[1]) : 10000;
    const int endpoints = argc > 2 ? std::atoi(argv[2]) : 10;
    const int runs = argc > 3 ? std::atoi(argv[3]) : 5;
    if (services <= 0 || endpoints <= 0 || runs <= 0 || services * endpoints > 0x7fffff) {
        std::fprintf(stderr, "usage: bench_daemon [SERVICES [ENDPOINTS_PER_SERVICE [RUNS]]]\n");
        return 2;
    }
    std::printf("bench_daemon: %d services x %d endpoints, best of %d runs\n", services, endpoints,
                runs);
    watch::Store store;
    proxy::ChangeTracker tracker("node-0", std::chrono::system_clock::now());
    store.subscribe([&](const std::vector<watch::Change>& changes) { tracker.record(changes); });
    for (int s = 0; s < services; ++s) {
        store.upsert(make_service(s));
        store.upsert(make_slice(s, endpoints, 1));
    }
    const proxy::PlannerOptions options{"node-0"};

    rules::Plan plan;
    const double full = best_ms(runs, [&](int) {
        auto batch = tracker.take(store, true);
        plan = proxy::build_plan(*batch.snapshot, options);
    });
    std::printf("%-44s %9.2f ms\n", "full: baseline reset + build_plan", full);

    uint32_t generation = 1;
    const double partial = best_ms(runs, [&](int run) {
        store.upsert(make_slice(run * 7919 % services, endpoints, ++generation));
        auto batch = tracker.take(store, false);
        plan = proxy::apply_incremental(plan, batch.services, *batch.snapshot, options);
    });
    std::printf("%-44s %9.2f ms   (%.1fx faster)\n", "partial: 1 slice changed, take + incremental",
                partial, full / partial);

    // The same with the caches cold, as in the daemon, where a change comes
    // alone and the other threads' work has evicted the plan meanwhile: what
    // a change pays per chunk of the plan it shares is a cache miss each.
    std::vector<unsigned char> evict(256u << 20);
    std::vector<double> cold;
    for (int run = 0; run < runs; ++run) {
        for (size_t i = 0; i < evict.size(); i += 64)
            evict[i] = static_cast<unsigned char>(i + run);
        cold.push_back(best_ms(1, [&](int) {
            store.upsert(make_slice((run + runs) * 7919 % services, endpoints, ++generation));
            auto batch = tracker.take(store, false);
            plan = proxy::apply_incremental(plan, batch.services, *batch.snapshot, options);
        }));
    }
    std::sort(cold.begin(), cold.end());
    std::printf("%-44s %9.3f ms   (median; %.3f ms worst)\n", "partial, caches cold",
                cold[cold.size() / 2], cold.back());

    // What the sync path pays for the Store's state after one change: the
    // write plus a fresh snapshot (docs/store.md).
    const double snapshot = best_ms(runs, [&](int run) {
        store.upsert(make_slice(run * 104729 % services, endpoints, ++generation));
        (void)store.snapshot();
    });
    std::printf("%-44s %9.3f ms\n", "1 slice changed: upsert + snapshot", snapshot);

    const double json = best_ms(runs, [&](int) { (void)rules::plan_to_json(plan); });
    std::printf("%-44s %9.2f ms   (/debug/services)\n", "plan_to_json", json);
    std::printf("%-44s %9zu\n", "service ports in the plan", plan.services.size());
    return 0;
}
