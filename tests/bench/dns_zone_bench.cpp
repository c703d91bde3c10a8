// dns_zone_bench: how long a zone rebuild takes (the work done off the
// serving path after each Store change) and how fast the resolver answers
// without sockets. Prints figures; asserts nothing.
//
// Usage: dns_zone_bench [SERVICES] (default 10000; a tenth of them headless
// with 10 ready endpoints each)
#include <chrono>
#include <cstdio>
#include <string>

#include "dns/resolver.h"
#include "dns/zone.h"
#include "watch/snapshot_builder.h"

int main(int argc, char** argv) {
    using namespace sb;
    using Clock = std::chrono::steady_clock;
    int services = argc > 1 ? std::stoi(argv[1]) : 10000;
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
        }
        snapshot.add(s);
    }
    auto built = snapshot.build();
    auto start = Clock::now();
    auto zone = dns::Zone::build(*built, dns::ZoneConfig{});
    double build = std::chrono::duration<double>(Clock::now() - start).count();
    if (!zone) return 1;
    std::printf("zone build: %d services (%d headless x 10 endpoints), %zu names, %.1f ms\n",
                services, services / 10, (*zone)->name_count(), build * 1000);

    dns::Message query;
    query.questions.push_back(
        {*dns::name_from_text("svc1.ns1.svc.cluster.local"), dns::type::kA, dns::kClassIN});
    const int rounds = 200000;
    start = Clock::now();
    size_t bytes = 0;
    for (int i = 0; i < rounds; ++i) {
        dns::Resolution r = dns::resolve(zone->get(), query, {});
        bytes += dns::write_message(r.response).bytes.size();
    }
    double resolve = std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("resolve+write (uncached path): %.0f ns per query (%zu bytes)\n",
                resolve / rounds * 1e9, bytes / rounds);
    return 0;
}
