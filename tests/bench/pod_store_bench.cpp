// pod_store_bench: the heap a Store holds for a node's Pods (issue 13's
// node-local Pod watch), decoded from a PodList as the API server sends it.
// Each Pod is typical of a Deployment's: dual-stack (two podIPs),
// ClusterFirst, no dnsConfig, ten labels and three annotations, two
// containers, the usual status. Also shown: what the same Pods would take
// with their labels and annotations kept, which the decoder drops
// (watch/decode/pod.cpp). Heap is glibc's in-use bytes (mallinfo2, chunk
// headers included), as dns_zone_bench measures it. Prints figures; asserts
// nothing.
//
// Usage: pod_store_bench [PODS...] (default 110, kubelet's default max-pods,
// and 1000)
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "watch/decode.h"
#include "watch/store.h"

namespace {

using namespace sb;

size_t heap_in_use() {
    return mallinfo2().uordblks;
}

std::map<std::string, std::string> labels_of(int i) {
    const std::string app = "app-" + std::to_string(i % 7);
    return {
        {"app", app},
        {"app.kubernetes.io/name", app},
        {"app.kubernetes.io/instance", app + "-prod"},
        {"app.kubernetes.io/version", "1.24.3"},
        {"app.kubernetes.io/component", "backend"},
        {"app.kubernetes.io/part-of", "shop"},
        {"app.kubernetes.io/managed-by", "Helm"},
        {"helm.sh/chart", app + "-4.2.1"},
        {"pod-template-hash", "7d4b9c5f8" + std::to_string(i % 10)},
        {"team", "payments"},
    };
}

std::map<std::string, std::string> annotations_of(int i) {
    return {
        {"kubectl.kubernetes.io/restartedAt", "2024-05-01T09:00:00Z"},
        {"prometheus.io/scrape", "true"},
        {"checksum/config",
         "9f2c1e7a4b" + std::to_string(i) + "d3e8c0b1a5f6e7d8c9b0a1f2e3d4c5b6a7"},
    };
}

std::string json_map(const std::map<std::string, std::string>& map) {
    std::string out = "{";
    for (const auto& [key, value] : map) {
        if (out.size() > 1) out += ',';
        out += '"' + key + "\":\"" + value + '"';
    }
    return out + "}";
}

// The i-th Pod of node-1, as a PodList item (no kind).
std::string pod_json(int i) {
    const std::string name = "app-" + std::to_string(i % 7) + "-7d4b9c5f8-" + std::to_string(i);
    const std::string v4 = "10.244.1." + std::to_string(i % 250 + 2);
    const std::string v6 = "fd00:10:244:1::" + std::to_string(i + 2);
    return R"({"metadata":{"name":")" + name + R"(","generateName":"app-7d4b9c5f8-",)" +
           R"("namespace":"ns-)" + std::to_string(i % 20) + R"(","uid":"0b5e5f5c-1c43-4a53-9a51-)" +
           std::to_string(100000000000 + i) + R"(","resourceVersion":")" +
           std::to_string(500000 + i) +
           R"(","creationTimestamp":"2024-05-02T10:11:12Z","labels":)" + json_map(labels_of(i)) +
           R"(,"annotations":)" + json_map(annotations_of(i)) +
           R"(,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",)"
           R"("name":"app-7d4b9c5f8","uid":"rs-1","controller":true,"blockOwnerDeletion":true}]},)"
           R"("spec":{"containers":[{"name":"app","image":"registry.example/app:1.24.3",)"
           R"("ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],)"
           R"("env":[{"name":"LOG_LEVEL","value":"info"}],)"
           R"("resources":{"limits":{"memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},)"
           R"("volumeMounts":[{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount",)"
           R"("name":"kube-api-access-x","readOnly":true}]},)"
           R"({"name":"sidecar","image":"registry.example/proxy:2.0"}],)"
           R"("dnsPolicy":"ClusterFirst","enableServiceLinks":true,"nodeName":"node-1",)"
           R"("restartPolicy":"Always","schedulerName":"default-scheduler",)"
           R"("serviceAccountName":"default","terminationGracePeriodSeconds":30},)"
           R"("status":{"conditions":[{"type":"Initialized","status":"True"},)"
           R"({"type":"Ready","status":"True"},{"type":"ContainersReady","status":"True"},)"
           R"({"type":"PodScheduled","status":"True"}],"hostIP":"192.168.49.2",)"
           R"("hostIPs":[{"ip":"192.168.49.2"}],"phase":"Running","podIP":")" +
           v4 + R"(","podIPs":[{"ip":")" + v4 + R"("},{"ip":")" + v6 +
           R"("}],"qosClass":"Burstable","startTime":"2024-05-02T10:11:12Z"}})";
}

std::string pod_list(int pods) {
    std::string out = R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},)"
                      R"("items":[)";
    for (int i = 0; i < pods; ++i) out += (i ? "," : "") + pod_json(i);
    return out + "]}";
}

void measure(int pods) {
    const std::string text = pod_list(pods);
    watch::Store store;
    const size_t before = heap_in_use();
    {
        auto document = watch::decode_document(text);
        if (!document || document->objects.pods.size() != static_cast<size_t>(pods)) {
            std::fprintf(stderr, "pod_store_bench: the generated PodList did not decode\n");
            std::exit(1);
        }
        store.replace(watch::Kind::kPod, std::move(document->objects));
    }
    auto snapshot = store.snapshot();
    const size_t held = heap_in_use() - before;

    // The same Pods with the labels and annotations kept, as the other
    // kinds keep theirs.
    watch::Store labelled;
    const size_t labelled_before = heap_in_use();
    {
        watch::Store::Objects objects;
        int i = 0;
        for (const auto& [key, pod] : snapshot->pods()) {
            watch::Pod copy = *pod;
            copy.meta.labels = labels_of(i);
            copy.meta.annotations = annotations_of(i);
            objects.pods.push_back(std::move(copy));
            ++i;
        }
        labelled.replace(watch::Kind::kPod, std::move(objects));
    }
    auto labelled_snapshot = labelled.snapshot();
    const size_t labelled_held = heap_in_use() - labelled_before;

    std::printf(
        "pod store: %d Pods (PodList of %.1f KB, %.0f B a Pod): %zu B held, %.0f B a Pod; "
        "with labels and annotations kept %zu B, %.0f B a Pod\n",
        pods, static_cast<double>(text.size()) / 1e3, static_cast<double>(text.size()) / pods, held,
        static_cast<double>(held) / pods, labelled_held, static_cast<double>(labelled_held) / pods);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> counts;
    for (int i = 1; i < argc; ++i) counts.push_back(std::stoi(argv[i]));
    if (counts.empty()) counts = {110, 1000};
    for (int pods : counts) measure(pods);
    return 0;
}
