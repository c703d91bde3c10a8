// kube_dump: runs a KubeSource alone (no planner, no kernel) and mirrors its
// Store into a JSON file, so tests can watch the client converge without the
// daemon. Usage:
//   kube_dump --out FILE [--kubeconfig PATH] [--master URL] [--node NAME]
//             [--watch-pods true]
// FILE is rewritten atomically (rename) whenever the Store, ready() or the
// metrics change; FILE holds {"synced", "ready", "services": {"ns/name":
// {"rv", "ports"}}, "endpointslices": {"ns/name": {"rv", "service",
// "addresses"}}, "nodes": {"name": {"rv"}}, "pods": {"ns/name": {"rv",
// "node", "ips"}}, "metrics": "..."}.
// Exit: 2 when create() fails (message on stderr), 0 on SIGTERM/SIGINT.
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "watch/kube/kube_source.h"

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int) {
    g_stop = true;
}

std::string render(const sb::watch::Snapshot& snapshot, bool ready, const std::string& metrics) {
    rapidjson::StringBuffer buffer;
    rapidjson::Writer<rapidjson::StringBuffer> out(buffer);
    out.StartObject();
    out.Key("synced");
    out.Bool(snapshot.synced());
    out.Key("ready");
    out.Bool(ready);
    out.Key("services");
    out.StartObject();
    for (const auto& [key, entry] : snapshot.services()) {
        if (!entry->service) continue;
        const auto& service = entry->service;
        out.Key(key.to_string().c_str());
        out.StartObject();
        out.Key("rv");
        out.String(service->meta.resource_version.c_str());
        out.Key("ports");
        out.StartArray();
        for (const auto& port : service->ports) out.Uint(port.port);
        out.EndArray();
        out.EndObject();
    }
    out.EndObject();
    out.Key("endpointslices");
    out.StartObject();
    for (const auto& [key, slice] : snapshot.endpoint_slices()) {
        out.Key(key.to_string().c_str());
        out.StartObject();
        out.Key("rv");
        out.String(slice->meta.resource_version.c_str());
        out.Key("service");
        out.String(slice->service_name.c_str());
        out.Key("addresses");
        out.StartArray();
        for (const auto& endpoint : slice->endpoints) {
            for (const auto& address : endpoint.addresses) {
                out.String(address.to_string().c_str());
            }
        }
        out.EndArray();
        out.EndObject();
    }
    out.EndObject();
    out.Key("nodes");
    out.StartObject();
    for (const auto& [key, node] : snapshot.nodes()) {
        out.Key(key.to_string().c_str());
        out.StartObject();
        out.Key("rv");
        out.String(node->meta.resource_version.c_str());
        out.EndObject();
    }
    out.EndObject();
    out.Key("pods");
    out.StartObject();
    for (const auto& [key, pod] : snapshot.pods()) {
        out.Key(key.to_string().c_str());
        out.StartObject();
        out.Key("rv");
        out.String(pod->meta.resource_version.c_str());
        out.Key("node");
        out.String(pod->node_name.c_str());
        out.Key("ips");
        out.StartArray();
        for (const auto& address : pod->pod_ips) out.String(address.to_string().c_str());
        out.EndArray();
        out.EndObject();
    }
    out.EndObject();
    out.Key("metrics");
    out.String(metrics.c_str());
    out.EndObject();
    return buffer.GetString();
}

}  // namespace

int main(int argc, char** argv) {
    sb::watch::kube::KubeSourceOptions options;
    std::string out_path;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        std::string value = argv[i + 1];
        if (flag == "--kubeconfig") {
            options.kubeconfig = value;
        } else if (flag == "--master") {
            options.master = value;
        } else if (flag == "--node") {
            options.node_name = value;
        } else if (flag == "--watch-pods") {
            options.watch_pods = value == "true";
        } else if (flag == "--out") {
            out_path = value;
        } else {
            std::fprintf(stderr, "kube_dump: unknown flag %s\n", flag.c_str());
            return 2;
        }
    }
    if (out_path.empty()) {
        std::fprintf(stderr, "kube_dump: --out is required\n");
        return 2;
    }
    sb::watch::Store store;
    auto source = sb::watch::kube::KubeSource::create(options, store);
    if (!source) {
        std::fprintf(stderr, "kube_dump: %s\n", source.error().message.c_str());
        return 2;
    }
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    (*source)->start();
    std::string last;
    while (!g_stop) {
        sb::metrics::TextWriter writer;
        (*source)->append_metrics(writer);
        const std::string metrics = writer.text();
        std::string text = render(*store.snapshot(), (*source)->ready(), metrics);
        if (text != last) {
            std::string temporary = out_path + ".tmp";
            std::ofstream(temporary) << text << "\n";
            std::rename(temporary.c_str(), out_path.c_str());
            last = std::move(text);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    (*source)->stop();
    return 0;
}
