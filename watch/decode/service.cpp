// Decoding a Service (docs/decoding.md, "Service").
#include "watch/decode/decoder.h"

#include <fmt/format.h>

#include "base/text.h"

namespace sb::watch::decoding {

namespace {

constexpr int64_t kMaxAffinityTimeoutSeconds = 86400;  // Kubernetes' upper bound (one day)
// The API sets no limit on a Service's ports (ValidateService only checks
// uniqueness); this bound is ours, chosen in docs/decoding.md.
constexpr size_t kMaxServicePorts = 20000;

}  // namespace

bool Decoder::decode(const Value& value, Service& out) {
    if (!decode_meta(value, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;
    const Value* spec = nullptr;
    if (!get_object(value, root, "spec", spec)) return false;
    const Path path = root.child("spec");
    if (!spec) return fail(path, "required field is missing");

    std::string_view type;
    if (!get_string(*spec, path, "type", type)) return false;
    if (type.empty() || type == "ClusterIP") {
        out.type = ServiceType::kClusterIP;
    } else if (type == "NodePort") {
        out.type = ServiceType::kNodePort;
    } else if (type == "LoadBalancer") {
        out.type = ServiceType::kLoadBalancer;
    } else if (type == "ExternalName") {
        out.type = ServiceType::kExternalName;
    } else {
        return fail(path.child("type"),
                    fmt::format("unknown Service type {} (want ClusterIP, NodePort, LoadBalancer "
                                "or ExternalName)",
                                quoted(type)));
    }

    if (!cluster_ips(*spec, path, out)) return false;
    if (!ip_families(*spec, path, out)) return false;
    if (!service_ports(*spec, path, out)) return false;

    std::map<std::string, std::string> selector;
    if (!get_string_map(*spec, path, "selector", selector)) return false;
    // An empty selector is stored as nil by the API server: no selector.
    out.has_selector = !selector.empty();

    if (!ip_list(*spec, path, "externalIPs", out.external_ips)) return false;

    std::string_view external_name;
    if (!get_string(*spec, path, "externalName", external_name)) return false;
    if (out.type == ServiceType::kExternalName) {
        if (!external_name.empty() && external_name.back() == '.') external_name.remove_suffix(1);
        if (external_name.empty()) {
            return fail(path.child("externalName"), "required for type ExternalName");
        }
        if (!is_dns_subdomain(external_name)) {
            return fail(path.child("externalName"),
                        fmt::format("invalid DNS name {}: must be an RFC 1123 subdomain",
                                    quoted(external_name)));
        }
        out.external_name = external_name;
    }

    // "Global" is the pre-1.x spelling of Cluster that kube-proxy still
    // accepts for the external policy (the internal one never had it).
    if (!get_traffic_policy(*spec, path, "externalTrafficPolicy", true,
                            out.external_traffic_policy) ||
        !get_traffic_policy(*spec, path, "internalTrafficPolicy", false,
                            out.internal_traffic_policy)) {
        return false;
    }

    std::optional<uint16_t> port;
    if (!get_port(*spec, path, "healthCheckNodePort", true, port)) return false;
    out.health_check_node_port = port.value_or(0);

    if (!session_affinity(*spec, path, out)) return false;

    const Value* ranges = nullptr;
    if (!get_array(*spec, path, "loadBalancerSourceRanges", ranges)) return false;
    if (ranges) {
        const Path here = path.child("loadBalancerSourceRanges");
        for (rapidjson::SizeType i = 0; i < ranges->Size(); ++i) {
            const Value& range = (*ranges)[i];
            if (!range.IsString()) return type_error(here.at(i), "a string", range);
            // As kube-proxy: surrounding whitespace is trimmed and host bits
            // are cleared ("10.0.0.1/8" means 10.0.0.0/8).
            const std::string_view text = trim(view(range));
            auto prefix = Prefix::parse(text, true);
            if (!prefix || !parse_ip(text.substr(0, text.find('/')))) {
                return fail(here.at(i), fmt::format("invalid CIDR {}", quoted(view(range))));
            }
            out.load_balancer_source_ranges.push_back(*prefix);
        }
    }

    if (!get_bool(*spec, path, "publishNotReadyAddresses", out.publish_not_ready_addresses)) {
        return false;
    }
    std::string_view distribution;
    if (!get_string(*spec, path, "trafficDistribution", distribution)) return false;
    out.traffic_distribution = distribution;

    return load_balancer_status(value, out);
}

bool Decoder::cluster_ips(const Value& spec, const Path& path, Service& out) {
    std::string_view cluster_ip;
    if (!get_string(spec, path, "clusterIP", cluster_ip)) return false;
    const Value* list = nullptr;
    if (!get_array(spec, path, "clusterIPs", list)) return false;

    const Path list_path = path.child("clusterIPs");
    std::vector<std::string_view> texts;
    if (list) {
        for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
            const Value& item = (*list)[i];
            if (!item.IsString()) return type_error(list_path.at(i), "a string", item);
            texts.push_back(view(item));
        }
        if (!cluster_ip.empty() && !texts.empty() && texts[0] != cluster_ip) {
            return fail(list_path.at(0), fmt::format("{} differs from spec.clusterIP {}",
                                                     quoted(texts[0]), quoted(cluster_ip)));
        }
    }
    const bool from_list = !texts.empty();
    if (!from_list && !cluster_ip.empty()) texts.push_back(cluster_ip);
    auto where = [&](size_t i) { return from_list ? list_path.at(i) : path.child("clusterIP"); };

    if (texts.size() > 2) {
        return fail(list_path,
                    fmt::format("at most 2 addresses (one per family), got {}", texts.size()));
    }
    if (!texts.empty() && texts[0] == "None") {
        if (texts.size() > 1) return fail(list_path.at(1), "a headless Service has no other IPs");
        out.headless = out.type != ServiceType::kExternalName;
        return true;
    }
    std::vector<IpAddress> ips;
    for (size_t i = 0; i < texts.size(); ++i) {
        auto ip = parse_ip(texts[i]);
        if (!ip) return fail(where(i), fmt::format("invalid IP address {}", quoted(texts[i])));
        ips.push_back(*ip);
    }
    if (ips.size() == 2 && ips[0].family() == ips[1].family()) {
        return fail(list_path.at(1),
                    fmt::format("second cluster IP has the same family ({}) as the first",
                                ips[0].family()));
    }
    // The API server allocates no cluster IP for ExternalName Services.
    if (out.type != ServiceType::kExternalName) out.cluster_ips = std::move(ips);
    return true;
}

bool Decoder::ip_families(const Value& spec, const Path& path, Service& out) {
    const Value* list = nullptr;
    if (!get_array(spec, path, "ipFamilies", list)) return false;
    if (!list) {
        // Absent: the families of the cluster IPs (the API's defaulting).
        for (const auto& ip : out.cluster_ips) out.ip_families.push_back(ip.family());
        return true;
    }
    const Path here = path.child("ipFamilies");
    if (list->Size() > 2) {
        return fail(here, fmt::format("at most 2 families, got {}", list->Size()));
    }
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
        const Value& item = (*list)[i];
        if (!item.IsString()) return type_error(here.at(i), "a string", item);
        IpFamily family;
        if (view(item) == "IPv4") {
            family = IpFamily::kV4;
        } else if (view(item) == "IPv6") {
            family = IpFamily::kV6;
        } else {
            return fail(here.at(i), fmt::format("unknown IP family {} (want IPv4 or IPv6)",
                                                quoted(view(item))));
        }
        if (!out.ip_families.empty() && out.ip_families[0] == family) {
            return fail(here.at(i), fmt::format("duplicate family {}", family));
        }
        if (i < out.cluster_ips.size() && out.cluster_ips[i].family() != family) {
            return fail(here.at(i),
                        fmt::format("{} does not match cluster IP {}", family, out.cluster_ips[i]));
        }
        out.ip_families.push_back(family);
    }
    return true;
}

bool Decoder::service_port(const Value& value, const Path& path, ServicePort& out) {
    if (!value.IsObject()) return type_error(path, "an object", value);
    if (!get_name(value, path, "name", &is_dns_label, "an RFC 1123 label", out.name)) return false;
    if (!get_protocol(value, path, out.protocol)) return false;

    std::optional<uint16_t> port;
    if (!get_port(value, path, "port", false, port)) return false;
    if (!port) return fail(path.child("port"), "required field is missing");
    out.port = *port;

    // targetPort 0, "" or absent all mean "the same as port" (API defaulting).
    out.target_port = IntOrString{false, out.port, {}};
    if (const Value* target = member(value, "targetPort")) {
        const Path here = path.child("targetPort");
        if (target->IsString()) {
            const std::string_view text = view(*target);
            if (!text.empty()) {
                if (!is_iana_svc_name(text)) {
                    return fail(here, fmt::format("invalid port name {}: must be an IANA service "
                                                  "name (at most 15 lowercase alphanumerics or "
                                                  "'-', with a letter)",
                                                  quoted(text)));
                }
                out.target_port = IntOrString{true, 0, std::string(text)};
            }
        } else if (target->IsNumber()) {
            int64_t number = 0;
            if (!as_integer(*target, here, number)) return false;
            if (number < 0 || number > 65535) {
                return fail(here, fmt::format("port {} out of range 1-65535", number));
            }
            if (number != 0) out.target_port.number = static_cast<int32_t>(number);
        } else {
            return type_error(here, "a number or a string", *target);
        }
    }

    std::optional<uint16_t> node_port;
    if (!get_port(value, path, "nodePort", true, node_port)) return false;
    out.node_port = node_port.value_or(0);
    return true;
}

bool Decoder::service_ports(const Value& spec, const Path& path, Service& out) {
    const Value* ports = nullptr;
    if (!get_array(spec, path, "ports", ports, kMaxServicePorts)) return false;
    if (!ports) return true;
    const Path here = path.child("ports");
    out.ports.reserve(ports->Size());
    FirstIndex<std::string> names;
    FirstIndex<std::pair<uint16_t, Protocol>> numbers;
    for (rapidjson::SizeType i = 0; i < ports->Size(); ++i) {
        const Path item = here.at(i);
        ServicePort port;
        if (!service_port((*ports)[i], item, port)) return false;
        // The planner keys service ports by name and dispatches by
        // (address, protocol, port): both must be unique, as the API demands.
        if (port.name.empty() && ports->Size() > 1) {
            return fail(item.child("name"), "required when a Service has more than one port");
        }
        if (auto j = names.earlier(port.name, i)) {
            return fail(
                item.child("name"),
                fmt::format("duplicate port name {} (also spec.ports[{}])", quoted(port.name), *j));
        }
        if (auto j = numbers.earlier({port.port, port.protocol}, i)) {
            return fail(item, fmt::format("duplicate port {}/{} (also spec.ports[{}])", port.port,
                                          port.protocol, *j));
        }
        out.ports.push_back(std::move(port));
    }
    return true;
}

bool Decoder::session_affinity(const Value& spec, const Path& path, Service& out) {
    std::string_view affinity;
    if (!get_string(spec, path, "sessionAffinity", affinity)) return false;
    if (affinity.empty() || affinity == "None") {
        out.session_affinity = SessionAffinity::kNone;
        return true;
    }
    if (affinity != "ClientIP") {
        return fail(
            path.child("sessionAffinity"),
            fmt::format("unknown session affinity {} (want None or ClientIP)", quoted(affinity)));
    }
    out.session_affinity = SessionAffinity::kClientIP;
    return with_object(
        spec, path, "sessionAffinityConfig", [&](const Value& config, const Path& config_path) {
            return with_object(
                config, config_path, "clientIP",
                [&](const Value& client_ip, const Path& client_path) {
                    std::optional<int64_t> timeout;
                    if (!get_integer(client_ip, client_path, "timeoutSeconds", timeout))
                        return false;
                    if (!timeout) return true;
                    if (*timeout < 1 || *timeout > kMaxAffinityTimeoutSeconds) {
                        return fail(client_path.child("timeoutSeconds"),
                                    fmt::format("timeout {} out of range 1-86400", *timeout));
                    }
                    out.affinity_timeout_seconds = static_cast<int32_t>(*timeout);
                    return true;
                });
        });
}

bool Decoder::load_balancer_status(const Value& value, Service& out) {
    auto ingress = [&](const Value& item, const Path& here, size_t) {
        LoadBalancerIngress entry;
        if (const Value* ip = member(item, "ip")) {
            IpAddress address;
            if (!ip_address(*ip, here.child("ip"), address)) return false;
            entry.ip = address;
        }
        if (!get_name(item, here, "hostname", &is_dns_subdomain, "an RFC 1123 subdomain",
                      entry.hostname)) {
            return false;
        }
        std::string_view mode;
        if (!get_string(item, here, "ipMode", mode)) return false;
        if (mode == "Proxy") {
            entry.ip_mode_proxy = true;
        } else if (!mode.empty() && mode != "VIP") {
            return fail(here.child("ipMode"),
                        fmt::format("unknown ipMode {} (want VIP or Proxy)", quoted(mode)));
        }
        out.load_balancer_ingress.push_back(std::move(entry));
        return true;
    };
    return with_object(value, Path{}, "status", [&](const Value& status, const Path& path) {
        return with_object(status, path, "loadBalancer", [&](const Value& lb, const Path& lb_path) {
            return for_each_object(lb, lb_path, "ingress", ingress);
        });
    });
}

}  // namespace sb::watch::decoding
