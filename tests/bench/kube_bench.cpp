// Benchmarks of the Kubernetes source; figures are printed, never asserted.
//
//   bench_kube decode [SERVICES] [ENDPOINTS_PER_SERVICE]
//     Decodes a LIST of SERVICES Services and as many EndpointSlices in
//     pages of 500 (as the client receives them), into a Store. Each page's
//     text is generated just before it is decoded, so the peak RSS is the
//     Store plus one page, as in the daemon.
//   bench_kube watch KUBECONFIG EVENTS
//     Runs a KubeSource against a (fake) API server: prints the time to the
//     first full sync and "SYNCED" on stdout, then counts Service updates
//     reaching the Store until EVENTS arrived (or 120 s passed) and prints
//     the rate and CPU use.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "watch/decode.h"
#include "watch/kube/kube_source.h"
#include "watch/store.h"

namespace {

using Clock = std::chrono::steady_clock;

double cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Current and peak resident set, in MB, from /proc/self/status.
double status_mb(const char* field) {
    FILE* file = std::fopen("/proc/self/status", "r");
    if (!file) return 0;
    char line[256];
    double kb = 0;
    size_t length = std::strlen(field);
    while (std::fgets(line, sizeof line, file)) {
        if (std::strncmp(line, field, length) == 0) kb = std::atof(line + length + 1);
    }
    std::fclose(file);
    return kb / 1024.0;
}

std::string ip(int base, int n) {
    return std::to_string(base) + "." + std::to_string((n >> 16) & 255) + "." +
           std::to_string((n >> 8) & 255) + "." + std::to_string(n & 255);
}

std::string service_json(int i) {
    std::string name = "svc-" + std::to_string(i);
    return R"({"kind":"Service","apiVersion":"v1","metadata":{"name":")" + name +
           R"(","namespace":"default","uid":"u)" + std::to_string(i) + R"(","resourceVersion":")" +
           std::to_string(1000 + i) + R"(","labels":{"app":")" + name +
           R"("}},"spec":{"type":"ClusterIP","clusterIP":")" + ip(10, i) + R"(","clusterIPs":[")" +
           ip(10, i) + R"("],"ipFamilies":["IPv4"],"selector":{"app":")" + name +
           R"("},"ports":[{"name":"http","port":80,"targetPort":8080,"protocol":"TCP"}]}})";
}

std::string slice_json(int i, int endpoints) {
    std::string name = "svc-" + std::to_string(i);
    std::string out =
        R"({"kind":"EndpointSlice","apiVersion":"discovery.k8s.io/v1","metadata":{"name":")" +
        name + R"(-abcde","namespace":"default","resourceVersion":")" + std::to_string(100000 + i) +
        R"(","labels":{"kubernetes.io/service-name":")" + name +
        R"("}},"addressType":"IPv4","endpoints":[)";
    for (int e = 0; e < endpoints; ++e) {
        if (e) out += ",";
        out +=
            R"({"addresses":[")" + ip(11, i * endpoints + e) +
            R"("],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":"node-)" +
            std::to_string(e % 50) +
            R"(","targetRef":{"kind":"Pod","namespace":"default","name":")" + name + "-" +
            std::to_string(e) + R"("}})";
    }
    return out + R"(],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]})";
}

std::string page(const char* kind, int first, int count, int total, int endpoints) {
    std::string out = std::string(R"({"kind":")") + kind +
                      R"(","apiVersion":"v1","metadata":{"resourceVersion":"999999")";
    if (first + count < total) out += R"(,"continue":"c)" + std::to_string(first + count) + "\"";
    out += R"(},"items":[)";
    for (int i = first; i < first + count && i < total; ++i) {
        if (i > first) out += ",";
        out += endpoints ? slice_json(i, endpoints) : service_json(i);
    }
    return out + "]}";
}

int bench_decode(int services, int endpoints) {
    constexpr int kPage = 500;
    double rss_before = status_mb("VmRSS:");
    sb::watch::Store store;
    double generate_seconds = 0;
    double generate_cpu = 0;
    double cpu_before = cpu_seconds();
    auto start = Clock::now();
    size_t bytes = 0;
    size_t objects = 0;
    for (const char* kind : {"ServiceList", "EndpointSliceList"}) {
        bool slices = std::string(kind) == "EndpointSliceList";
        sb::watch::Store::Objects all;
        for (int first = 0; first < services; first += kPage) {
            auto generate_start = Clock::now();
            double generate_cpu_start = cpu_seconds();
            std::string text = page(kind, first, kPage, services, slices ? endpoints : 0);
            generate_seconds +=
                std::chrono::duration<double>(Clock::now() - generate_start).count();
            generate_cpu += cpu_seconds() - generate_cpu_start;
            bytes += text.size();
            auto document = sb::watch::decode_document(text);
            if (!document || !document->errors.empty()) {
                std::fprintf(stderr, "bench_kube: decode failed\n");
                return 1;
            }
            for (auto& s : document->objects.services) all.services.push_back(std::move(s));
            for (auto& s : document->objects.endpoint_slices) {
                all.endpoint_slices.push_back(std::move(s));
            }
        }
        objects += all.services.size() + all.endpoint_slices.size();
        store.replace(slices ? sb::watch::Kind::kEndpointSlice : sb::watch::Kind::kService,
                      std::move(all));
    }
    double wall = std::chrono::duration<double>(Clock::now() - start).count() - generate_seconds;
    double cpu = cpu_seconds() - cpu_before - generate_cpu;
    auto snapshot = store.snapshot();
    std::printf(
        "kube decode: %d services + %d endpoints (%zu objects, %.1f MB of JSON in pages of %d)\n"
        "kube decode: %.3f s wall, %.3f s CPU (JSON generation excluded), "
        "%.0f objects/s\n"
        "kube decode: RSS %.1f MB before, %.1f MB after, peak %.1f MB (target < 50 MB); "
        "store holds %zu services, %zu slices\n",
        services, services * endpoints, objects, double(bytes) / 1e6, kPage, wall, cpu,
        double(objects) / wall, rss_before, status_mb("VmRSS:"), status_mb("VmHWM:"),
        snapshot->service_count(), snapshot->endpoint_slices().size());
    return 0;
}

int bench_watch(const std::string& kubeconfig, uint64_t events) {
    sb::watch::Store store;
    std::atomic<uint64_t> service_changes{0};
    store.subscribe([&](const std::vector<sb::watch::Change>& changes) {
        for (const auto& change : changes) {
            if (change.kind == sb::watch::Kind::kService) ++service_changes;
        }
    });
    sb::watch::kube::KubeSourceOptions options;
    options.kubeconfig = kubeconfig;
    auto source = sb::watch::kube::KubeSource::create(options, store);
    if (!source) {
        std::fprintf(stderr, "bench_kube: %s\n", source.error().message.c_str());
        return 2;
    }
    double cpu_start = cpu_seconds();
    auto start = Clock::now();
    (*source)->start();
    while (!store.snapshot()->synced()) {
        if (Clock::now() - start > std::chrono::seconds(120)) {
            std::fprintf(stderr, "bench_kube: no sync within 120 s\n");
            return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    double sync_seconds = std::chrono::duration<double>(Clock::now() - start).count();
    auto snapshot = store.snapshot();
    std::printf(
        "kube list: first full sync of %zu services and %zu slices from the fake "
        "server in %.3f s (%.3f s CPU), peak RSS %.1f MB\n",
        snapshot->service_count(), snapshot->endpoint_slices().size(), sync_seconds,
        cpu_seconds() - cpu_start, status_mb("VmHWM:"));
    snapshot.reset();
    uint64_t base = service_changes;
    std::printf("SYNCED\n");
    std::fflush(stdout);
    double cpu_watch = cpu_seconds();
    auto watch_start = Clock::now();
    auto deadline = watch_start + std::chrono::seconds(120);
    while (service_changes - base < events && Clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    double seconds = std::chrono::duration<double>(Clock::now() - watch_start).count();
    uint64_t received = service_changes - base;
    double cpu = cpu_seconds() - cpu_watch;
    std::printf(
        "kube watch: %llu Service updates applied in %.2f s (%.0f/s), %.3f s CPU "
        "(%.1f%% of one core at this rate), peak RSS %.1f MB\n",
        static_cast<unsigned long long>(received), seconds, double(received) / seconds, cpu,
        100.0 * cpu / seconds, status_mb("VmHWM:"));
    (*source)->stop();
    return received >= events ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    std::string mode = argc > 1 ? argv[1] : "decode";
    if (mode == "decode") {
        int services = argc > 2 ? std::atoi(argv[2]) : 10000;
        int endpoints = argc > 3 ? std::atoi(argv[3]) : 10;
        return bench_decode(services, endpoints);
    }
    if (mode == "watch" && argc > 3)
        return bench_watch(argv[2], std::strtoull(argv[3], nullptr, 10));
    std::fprintf(stderr,
                 "usage: bench_kube decode [SERVICES] [ENDPOINTS] | watch KUBECONFIG EVENTS\n");
    return 2;
}
