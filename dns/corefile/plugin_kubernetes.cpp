// CoreDNS's plugin/kubernetes/setup.go: the `kubernetes` block as a
// KubernetesConfig (zones, pods, ttl, fallthrough, the record options).
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string_view>

#include "base/go_duration.h"

namespace sb::dns {

namespace {

// The options switchboard warns about (it watches the whole cluster with
// its own credentials), checked first as CoreDNS's ParseStanza checks
// them: their argument counts, ignore's value, startup_timeout's duration.
// Label selectors are not parsed (docs/corefile.md, Differences).
Status check_ignored(const CorefileDirective& o, const MapContext& context) {
    if (o.name == "namespaces" || o.name == "endpoint" || o.name == "labels" ||
        o.name == "namespace_labels") {
        return context.count(o, 1, SIZE_MAX);
    }
    if (o.name == "tls") return context.count(o, 3, 3);
    if (o.name == "kubeconfig") return context.count(o, 1, 2);
    if (o.name == "ignore" && !o.args.empty() && o.args[0] != "empty_service") {
        return context.at(o.line, fmt::format("ignore: unable to parse ignore value {}",
                                              escaped_for_message(o.args[0])));
    }
    if (o.name == "startup_timeout") {
        if (auto s = context.count(o, 1, SIZE_MAX); !s) return s;
        if (auto d = context.check(o, parse_go_duration(o.args[0])); !d) return d.error();
    }
    if (o.name.starts_with("apiserver_")) {
        if (auto s = context.count(o, 1, 1); !s) return s;
        // apiserver_qps is a float; burst and max_inflight integers; all >= 0.
        if (o.name == "apiserver_qps") {
            const std::string& text = o.args[0];
            char* end = nullptr;
            const double qps = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !(qps >= 0)) {
                return context.at(o.line, fmt::format("apiserver_qps: {} is not a number >= 0",
                                                      escaped_for_message(text)));
            }
        } else if (auto n = context.check(o, parse_number(o.args[0], 0, INT32_MAX)); !n) {
            return n.error();
        }
    }
    return {};
}

}  // namespace

Status map_kubernetes(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    KubernetesConfig k;
    k.line = d.line;
    auto zones = context.zones_of(d, d.args);
    if (!zones) return zones.error();
    k.zones = zones->empty() ? server.zones : std::move(*zones);
    // CoreDNS 1.12-1.14's options switchboard does not act on (resyncperiod
    // and upstream are gone from CoreDNS: unknown properties there and here).
    static const std::set<std::string_view> ignored = {
        "endpoint",         "tls",           "namespaces",      "labels",
        "namespace_labels", "kubeconfig",    "ignore",          "multicluster",
        "startup_timeout",  "apiserver_qps", "apiserver_burst", "apiserver_max_inflight"};
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
        } else if (o.name == "zonal") {
            // Zone-scoped names of headless services (CoreDNS 1.14): answers
            // switchboard would not give, so refused rather than ignored.
            if (auto s = context.count(o, 0, 0); !s) return s;
            return context.at(o.line,
                              "kubernetes: zonal (zone-scoped names of headless "
                              "services) is not supported");
        } else if (ignored.contains(o.name)) {
            if (auto s = check_ignored(o, context); !s) return s;
            if (o.name == "multicluster") {
                // CoreDNS: the plugin must be authoritative for each zone.
                auto zones = context.zones_of(o, o.args);
                if (!zones) return zones.error();
                for (const auto& zone : *zones) {
                    if (std::find(k.zones.begin(), k.zones.end(), zone) == k.zones.end()) {
                        return context.at(o.line, fmt::format("kubernetes: not authoritative for "
                                                              "the multicluster zone {}",
                                                              escaped_for_message(zone)));
                    }
                }
            }
            context.unsupported_option("kubernetes", o);
        } else {
            return context.unknown_option("kubernetes", o);
        }
    }
    const auto given = [&d](std::string_view name) {
        return std::any_of(d.block.begin(), d.block.end(),
                           [name](const CorefileDirective& o) { return o.name == name; });
    };
    if (given("namespaces") && given("namespace_labels")) {
        return context.at(d.line, "kubernetes: namespaces and namespace_labels cannot both be set");
    }
    server.kubernetes = std::move(k);
    return {};
}

}  // namespace sb::dns
