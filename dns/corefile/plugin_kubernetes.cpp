// CoreDNS's plugin/kubernetes/setup.go: the `kubernetes` block as a
// KubernetesConfig (zones, pods, ttl, fallthrough, the record options).
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <set>
#include <string_view>

namespace sb::dns {

Status map_kubernetes(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    KubernetesConfig k;
    k.line = d.line;
    auto zones = context.zones_of(d, d.args);
    if (!zones) return zones.error();
    k.zones = zones->empty() ? server.zones : std::move(*zones);
    static const std::set<std::string_view> ignored = {"resyncperiod",
                                                       "endpoint",
                                                       "tls",
                                                       "namespaces",
                                                       "labels",
                                                       "namespace_labels",
                                                       "kubeconfig",
                                                       "ignore",
                                                       "multicluster",
                                                       "startup_timeout",
                                                       "upstream",
                                                       "apiserver_qps",
                                                       "apiserver_burst",
                                                       "apiserver_max_inflight"};
    for (const auto& o : d.block) {
        if (o.name == "pods") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            const std::string& mode = o.args[0];
            if (mode == "disabled") {
                k.pods = PodRecords::kDisabled;
            } else if (mode == "insecure") {
                k.pods = PodRecords::kInsecure;
            } else if (mode == "verified") {
                k.pods = PodRecords::kVerified;
            } else {
                return context.at(o.line,
                                  fmt::format("pods: {} is not one of disabled, insecure, verified",
                                              escaped_for_message(mode)));
            }
        } else if (o.name == "fallthrough") {
            auto f = context.fallthrough(o);
            if (!f) return f.error();
            k.fallthrough = std::move(*f);
        } else if (o.name == "ttl") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            auto ttl = context.check(o, parse_number(o.args[0], 0, 3600));
            if (!ttl) return ttl.error();
            k.ttl = *ttl;
        } else if (o.name == "endpoint_pod_names" || o.name == "noendpoints") {
            if (auto s = context.count(o, 0, 0); !s) return s;
            (o.name == "noendpoints" ? k.noendpoints : k.endpoint_pod_names) = true;
        } else if (ignored.contains(o.name)) {
            context.unsupported_option("kubernetes", o);
        } else {
            return context.unknown_option("kubernetes", o);
        }
    }
    server.kubernetes = std::move(k);
    return {};
}

}  // namespace sb::dns
