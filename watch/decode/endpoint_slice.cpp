// Decoding an EndpointSlice (docs/decoding.md, "EndpointSlice").
#include "watch/decode/decoder.h"

#include <fmt/format.h>

namespace sb::watch::decoding {

namespace {

// The API server's EndpointSlice limits (pkg/apis/discovery/validation).
constexpr size_t kMaxSliceEndpoints = 1000;
constexpr size_t kMaxSlicePorts = 100;
constexpr size_t kMaxEndpointAddresses = 100;

}  // namespace

bool Decoder::decode(const Value& value, EndpointSlice& out) {
    if (!decode_meta(value, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;

    auto label = out.meta.labels.find(kServiceNameLabel);
    if (label != out.meta.labels.end() && !label->second.empty()) {
        if (!is_dns_label(label->second)) {
            return fail(root.child("metadata").child("labels").map_key(kServiceNameLabel),
                        fmt::format("invalid Service name {}: must be an RFC 1123 label",
                                    quoted(label->second)));
        }
        out.service_name = label->second;
    }
    // Held once, in service_name (one map node per slice: 6 MB at 50k).
    if (label != out.meta.labels.end()) out.meta.labels.erase(label);

    const Value* type = member(value, "addressType");
    const Path type_path = root.child("addressType");
    if (!type) return fail(type_path, "required field is missing");
    if (!type->IsString()) return type_error(type_path, "a string", *type);
    if (view(*type) == "IPv4") {
        out.address_type = AddressType::kIPv4;
    } else if (view(*type) == "IPv6") {
        out.address_type = AddressType::kIPv6;
    } else if (view(*type) == "FQDN") {
        out.address_type = AddressType::kFQDN;
    } else {
        return fail(type_path, fmt::format("unknown addressType {} (want IPv4, IPv6 or FQDN)",
                                           quoted(view(*type))));
    }

    const Value* endpoints = nullptr;
    if (!get_array(value, root, "endpoints", endpoints, kMaxSliceEndpoints)) return false;
    if (endpoints) {
        const Path here = root.child("endpoints");
        out.endpoints.resize(endpoints->Size());
        for (rapidjson::SizeType i = 0; i < endpoints->Size(); ++i) {
            if (!endpoint((*endpoints)[i], here.at(i), out.address_type, out.endpoints[i])) {
                return false;
            }
        }
    }
    return endpoint_ports(value, out);
}

bool Decoder::endpoint(const Value& value, const Path& path, AddressType type, Endpoint& out) {
    if (!value.IsObject()) return type_error(path, "an object", value);
    const Value* addresses = nullptr;
    if (!get_array(value, path, "addresses", addresses, kMaxEndpointAddresses)) return false;
    const Path addresses_path = path.child("addresses");
    if (!addresses || addresses->Empty()) {
        return fail(addresses_path, "at least one address is required");
    }
    for (rapidjson::SizeType i = 0; i < addresses->Size(); ++i) {
        const Value& item = (*addresses)[i];
        const Path here = addresses_path.at(i);
        if (!item.IsString()) return type_error(here, "a string", item);
        const std::string_view text = view(item);
        if (type == AddressType::kFQDN) {
            if (!is_dns_subdomain(text)) {
                return fail(here, fmt::format("invalid FQDN {}: must be an RFC 1123 subdomain "
                                              "(addressType FQDN)",
                                              quoted(text)));
            }
            continue;
        }
        auto ip = parse_ip(text);
        if (!ip) return fail(here, fmt::format("invalid IP address {}", quoted(text)));
        const IpFamily want = type == AddressType::kIPv4 ? IpFamily::kV4 : IpFamily::kV6;
        if (ip->family() != want) {
            return fail(here, fmt::format("address {} is not {} (addressType {})", quoted(text),
                                          want, to_string(type)));
        }
        if (std::string why = special_endpoint_range(*ip); !why.empty()) {
            return fail(here, fmt::format("address {} {}", quoted(text), why));
        }
        out.addresses.push_back(*ip);
    }

    // kube-proxy's reading: absent ready/serving mean true, absent
    // terminating means false (the Endpoint's defaults).
    const bool conditions_ok =
        with_object(value, path, "conditions", [&](const Value& conditions, const Path& here) {
            return get_bool(conditions, here, "ready", out.ready) &&
                   get_bool(conditions, here, "serving", out.serving) &&
                   get_bool(conditions, here, "terminating", out.terminating);
        });
    if (!conditions_ok) return false;
    std::string hostname, node_name, zone;
    if (!get_name(value, path, "hostname", &is_dns_label, "an RFC 1123 label", hostname) ||
        !get_name(value, path, "nodeName", &is_dns_subdomain, "an RFC 1123 subdomain", node_name) ||
        !get_name(value, path, "zone", &is_label_value, "a Kubernetes label value", zone)) {
        return false;
    }
    out.hostname = hostname;
    out.node_name = node_name;
    out.zone = zone;
    if (!endpoint_hints(value, path, out)) return false;
    return with_object(value, path, "targetRef", [&](const Value& ref, const Path& here) {
        std::string_view kind, ns, name;
        if (!get_string(ref, here, "kind", kind) || !get_string(ref, here, "namespace", ns) ||
            !get_string(ref, here, "name", name)) {
            return false;
        }
        out.target_ref = TargetRef(Symbol(kind), Symbol(ns), name);
        return true;
    });
}

bool Decoder::endpoint_hints(const Value& value, const Path& path, Endpoint& out) {
    EndpointHints decoded;
    bool present = false;
    const bool ok =
        with_object(value, path, "hints", [&](const Value& hints, const Path& hints_path) {
            present = true;
            auto names = [&](const char* key, bool (*valid)(std::string_view), const char* rule,
                             std::vector<std::string>& names_out) {
                return for_each_object(
                    hints, hints_path, key, [&](const Value& item, const Path& here, size_t) {
                        if (!member(item, "name")) {
                            return fail(here.child("name"), "required field is missing");
                        }
                        std::string name;
                        if (!get_name(item, here, "name", valid, rule, name)) {
                            return false;
                        }
                        names_out.push_back(std::move(name));
                        return true;
                    });
            };
            return names("forZones", &is_label_value, "a Kubernetes label value",
                         decoded.for_zones) &&
                   names("forNodes", &is_dns_subdomain, "an RFC 1123 subdomain", decoded.for_nodes);
        });
    if (ok && present) out.hints = std::make_shared<const EndpointHints>(std::move(decoded));
    return ok;
}

bool Decoder::endpoint_ports(const Value& value, EndpointSlice& out) {
    FirstIndex<std::string> names;
    return for_each_object(
        value, Path{}, "ports",
        [&](const Value& item, const Path& here, size_t i) {
            EndpointPort port;
            if (!get_name(item, here, "name", &is_dns_label, "an RFC 1123 label", port.name)) {
                return false;
            }
            if (auto j = names.earlier(port.name, i)) {
                return fail(
                    here.child("name"),
                    fmt::format("duplicate port name {} (also ports[{}])", quoted(port.name), *j));
            }
            if (!get_protocol(item, here, port.protocol)) return false;
            if (!get_port(item, here, "port", false, port.port)) return false;
            out.ports.push_back(std::move(port));
            return true;
        },
        kMaxSlicePorts);
}

}  // namespace sb::watch::decoding
