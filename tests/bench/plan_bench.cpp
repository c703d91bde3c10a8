// Decoding a large cluster and planning it: 10k Services x 10 endpoints
// (100k endpoints) in one List document, generated in memory. Prints the
// time of each stage and the peak RSS after it; asserts nothing.
//
// Usage: bench_plan [SERVICES [ENDPOINTS_PER_SERVICE]]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "proxy/sync/planner.h"
#include "rules/plan_json.h"
#include "watch/decode.h"
#include "watch/store.h"

namespace {

constexpr int kNodes = 10;
constexpr int kNamespaces = 50;

std::string node_name(int index) {
    return "node-" + std::to_string(index);
}

// Addresses from a counter: 10.96.0.0/12 for Services, 10.128.0.0/9 for pods.
std::string address(uint32_t base, uint32_t index) {
    uint32_t value = base + index;
    return std::to_string(value >> 24) + "." + std::to_string((value >> 16) & 0xff) + "." +
           std::to_string((value >> 8) & 0xff) + "." + std::to_string(value & 0xff);
}

void append_node(std::string& out, int index) {
    const std::string name = node_name(index);
    out += R"({"apiVersion":"v1","kind":"Node","metadata":{"name":")" + name +
           R"(","uid":"node-uid-)" + std::to_string(index) +
           R"(","resourceVersion":"1","labels":{"kubernetes.io/hostname":")" + name +
           R"(","topology.kubernetes.io/zone":"zone-)" + std::to_string(index % 3) +
           R"("}},"status":{"addresses":[{"type":"InternalIP","address":")" +
           address(0xc0a80000u, static_cast<uint32_t>(index + 2)) + R"("}]}})";
}

void append_service(std::string& out, int index, int endpoints) {
    const std::string ns = "ns-" + std::to_string(index % kNamespaces);
    const std::string name = "svc-" + std::to_string(index);
    const std::string cluster_ip = address(0x0a600000u, static_cast<uint32_t>(index + 10));
    out +=
        R"({"apiVersion":"v1","kind":"Service","metadata":{"name":")" + name +
        R"(","namespace":")" + ns + R"(","uid":"svc-uid-)" + std::to_string(index) +
        R"(","resourceVersion":"2"},"spec":{"type":"ClusterIP","clusterIP":")" + cluster_ip +
        R"(","clusterIPs":[")" + cluster_ip + R"("],"ipFamilies":["IPv4"],"selector":{"app":")" +
        name + R"("},"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":"http"}],)" +
        R"("sessionAffinity":"None","internalTrafficPolicy":"Cluster"},"status":{"loadBalancer":{}}},)";
    out += R"({"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","addressType":"IPv4",)" +
           std::string(R"("metadata":{"name":")") + name + R"(-abcde","namespace":")" + ns +
           R"(","uid":"slice-uid-)" + std::to_string(index) +
           R"(","resourceVersion":"3","labels":{"kubernetes.io/service-name":")" + name +
           R"("}},"ports":[{"name":"http","protocol":"TCP","port":8080}],"endpoints":[)";
    for (int e = 0; e < endpoints; ++e) {
        const int node = (index + e) % kNodes;
        if (e > 0) out += ',';
        out += R"({"addresses":[")" +
               address(0x0a800000u, static_cast<uint32_t>(index * endpoints + e + 1)) +
               R"("],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":")" +
               node_name(node) + R"(","zone":"zone-)" + std::to_string(node % 3) + R"("})";
    }
    out += "]}";
}

std::string generate(int services, int endpoints) {
    std::string out =
        R"({"apiVersion":"v1","kind":"List","metadata":{"resourceVersion":""},"items":[)";
    for (int n = 0; n < kNodes; ++n) {
        append_node(out, n);
        out += ',';
    }
    for (int s = 0; s < services; ++s) {
        if (s > 0) out += ',';
        append_service(out, s, endpoints);
    }
    out += "]}";
    return out;
}

long peak_rss_mib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss / 1024;  // kilobytes on Linux
}

// Runs `work`, prints its wall time and the process's peak RSS so far, and
// returns what `work` returned.
template <typename Work>
auto timed(const char* name, Work work) {
    const auto start = std::chrono::steady_clock::now();
    auto result = work();
    const auto elapsed = std::chrono::steady_clock::now() - start;
    std::printf("%-28s %9.1f ms   peak RSS %5ld MiB\n", name,
                std::chrono::duration<double, std::milli>(elapsed).count(), peak_rss_mib());
    return result;
}

}  // namespace

int main(int argc, char** argv) {
    const int services = argc > 1 ? std::atoi(argv[1]) : 10000;
    const int endpoints = argc > 2 ? std::atoi(argv[2]) : 10;
    if (services <= 0 || endpoints <= 0 || services * endpoints > 0x7fffff) {
        std::fprintf(stderr, "usage: bench_plan [SERVICES [ENDPOINTS_PER_SERVICE]]\n");
        return 2;
    }
    std::printf("bench_plan: %d services x %d endpoints, %d nodes\n", services, endpoints, kNodes);

    std::string json = timed("generate document", [&] { return generate(services, endpoints); });
    std::printf("%-28s %9.1f MiB\n", "document size", static_cast<double>(json.size()) / (1 << 20));

    auto decoded = timed("decode_document", [&] { return sb::watch::decode_document(json); });
    if (!decoded) {
        std::fprintf(stderr, "decode failed: %s\n", decoded.error().describe().c_str());
        return 1;
    }
    if (!decoded->errors.empty()) {
        std::fprintf(stderr, "decode skipped %zu objects, first: %s\n", decoded->errors.size(),
                     decoded->errors.front().describe().c_str());
        return 1;
    }
    json = std::string();

    sb::watch::Store store;
    auto snapshot = timed("store replace + snapshot", [&] {
        store.replace(std::move(decoded->objects));
        return store.snapshot();
    });

    const sb::proxy::PlannerOptions options{node_name(0)};
    auto plan = timed("build_plan", [&] { return sb::proxy::build_plan(*snapshot, options); });
    plan = timed("build_plan (again)", [&] { return sb::proxy::build_plan(*snapshot, options); });
    size_t cluster = 0;
    size_t local = 0;
    for (const auto& service : plan.services) {
        cluster += service.cluster_endpoints.size();
        local += service.local_endpoints.size();
    }
    std::printf("%-28s %zu service ports, %zu cluster endpoints, %zu local\n", "plan",
                plan.services.size(), cluster, local);
    json = timed("plan_to_json", [&] { return sb::rules::plan_to_json(plan); });
    std::printf("%-28s %9.1f MiB\n", "plan document size",
                static_cast<double>(json.size()) / (1 << 20));
    return 0;
}
