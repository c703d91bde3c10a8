#include "watch/decode.h"

#include <rapidjson/error/en.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <type_traits>

#include "base/timestamp.h"

namespace sb::watch {

namespace {

using rapidjson::Value;

constexpr const char* kUnknownObject = "<unknown>";
constexpr const char* kLastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration";
constexpr int64_t kMaxAffinityTimeoutSeconds = 86400;  // Kubernetes' upper bound (one day)
// The API server's EndpointSlice limits (pkg/apis/discovery/validation).
constexpr size_t kMaxSliceEndpoints = 1000;
constexpr size_t kMaxSlicePorts = 100;
constexpr size_t kMaxEndpointAddresses = 100;
// The API sets no limit on a Service's ports (ValidateService only checks
// uniqueness); this bound is ours, chosen in docs/decoding.md.
constexpr size_t kMaxServicePorts = 20000;

// Iterative parsing bounds the parser's stack whatever the nesting depth;
// encoding validation keeps invalid UTF-8 out of names and messages.
constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseValidateEncodingFlag |
                                 rapidjson::kParseInsituFlag;

// Untrusted text quoted in messages: printable ASCII only, bounded length.
std::string printable(std::string_view text, size_t limit = 80) {
    std::string out;
    for (char c : text.substr(0, limit)) {
        out += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    if (text.size() > limit) out += "...";
    return out;
}

// A JSON path built on the stack while descending, rendered only when an
// error is reported (decoding 100k endpoints must not build 100k strings).
struct Path {
    const Path* parent = nullptr;
    std::string_view key;  // a field name, or a map key when quoted
    int64_t index = -1;    // >= 0: an array element
    bool quoted = false;

    Path child(std::string_view name) const { return Path{this, name, -1, false}; }
    Path at(size_t i) const { return Path{this, {}, static_cast<int64_t>(i), false}; }
    Path map_key(std::string_view name) const { return Path{this, name, -1, true}; }

    std::string str() const {
        std::string out = parent ? parent->str() : std::string();
        if (index >= 0) {
            out += "[" + std::to_string(index) + "]";
        } else if (quoted) {
            out += "[\"" + printable(key) + "\"]";  // a map key is outside text
        } else if (!key.empty()) {
            if (!out.empty()) out += '.';
            out += key;
        }
        return out;
    }
};

std::string quoted(std::string_view text) {
    return "\"" + printable(text) + "\"";
}

std::string_view view(const Value& value) {
    return {value.GetString(), value.GetStringLength()};
}

const char* type_name(const Value& value) {
    switch (value.GetType()) {
        case rapidjson::kNullType:
            return "null";
        case rapidjson::kFalseType:
        case rapidjson::kTrueType:
            return "boolean";
        case rapidjson::kObjectType:
            return "object";
        case rapidjson::kArrayType:
            return "array";
        case rapidjson::kStringType:
            return "string";
        case rapidjson::kNumberType:
            return "number";
    }
    return "value";
}

// Go's encoding/json treats null like an absent field; so do we.
const Value* member(const Value& object, const char* name) {
    auto it = object.FindMember(name);
    if (it == object.MemberEnd() || it->value.IsNull()) return nullptr;
    return &it->value;
}

bool is_alnum_lower(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// RFC 1035 label as Kubernetes checks Service names: an RFC 1123 label that
// starts with a letter.
bool is_dns1035_label(std::string_view text) {
    return is_dns_label(text) && text[0] >= 'a' && text[0] <= 'z';
}

// Kubernetes label value (topology zones): <= 63, [A-Za-z0-9._-],
// alphanumeric at both ends; empty is allowed by the caller.
bool is_label_value(std::string_view text) {
    if (text.empty() || text.size() > 63) return false;
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (!alnum(text.front()) || !alnum(text.back())) return false;
    return std::all_of(text.begin(), text.end(),
                       [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// Kubernetes qualified name (label and taint keys): an optional prefix that
// is an RFC 1123 subdomain and a '/', then a name of at most 63
// alphanumerics, '-', '_' or '.', alphanumeric at both ends.
bool is_qualified_name(std::string_view text) {
    const size_t slash = text.find('/');
    std::string_view name = text;
    if (slash != std::string_view::npos) {
        if (!is_dns_subdomain(text.substr(0, slash))) return false;
        name = text.substr(slash + 1);
    }
    return is_label_value(name);
}

// IANA service name (RFC 6335) as Kubernetes checks named ports: 1-15
// characters, [a-z0-9-], at least one letter, no leading, trailing or
// doubled '-'.
bool is_iana_svc_name(std::string_view text) {
    if (text.empty() || text.size() > 15) return false;
    if (text.front() == '-' || text.back() == '-') return false;
    if (text.find("--") != std::string_view::npos) return false;
    bool letter = false;
    for (char c : text) {
        if (c >= 'a' && c <= 'z') {
            letter = true;
        } else if (!(c >= '0' && c <= '9') && c != '-') {
            return false;
        }
    }
    return letter;
}

// IpAddress::parse hands the text to inet_pton, which stops at a NUL; the
// character check first keeps "10.0.0.1\0junk" from passing as 10.0.0.1.
std::optional<IpAddress> parse_ip(std::string_view text) {
    for (char c : text) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                        (c >= 'A' && c <= 'F') || c == '.' || c == ':';
        if (!ok) return std::nullopt;
    }
    auto parsed = IpAddress::parse(text);
    if (!parsed) return std::nullopt;
    return *parsed;
}

// Why the API server refuses `address` as an endpoint (ValidateEndpointIP:
// these ranges serve node-local purposes; the link-local range holds the
// cloud metadata address, CVE-2021-25737); empty when it is allowed. An
// IPv4-mapped IPv6 address is judged as its IPv4 address, as Go's net.IP.
std::string special_endpoint_range(const IpAddress& address) {
    IpAddress ip = address;
    const uint8_t* b = address.bytes();
    if (address.is_v6() && std::all_of(b, b + 10, [](uint8_t x) { return x == 0; }) &&
        b[10] == 0xff && b[11] == 0xff) {
        ip = IpAddress::from_bytes(IpFamily::kV4, b + 12);
    }
    const uint8_t* v = ip.bytes();
    if (ip.is_unspecified()) return "may not be unspecified (0.0.0.0, ::)";
    if (ip.is_loopback()) return "may not be in the loopback range (127.0.0.0/8, ::1/128)";
    if (ip.is_link_local()) {
        return "may not be in the link-local range (169.254.0.0/16, fe80::/10)";
    }
    const bool link_local_multicast =
        ip.is_v4() ? v[0] == 224 && v[1] == 0 && v[2] == 0 : v[0] == 0xff && (v[1] & 0x0f) == 0x02;
    if (link_local_multicast) {
        return "may not be in the link-local multicast range (224.0.0.0/24, ff02::/16)";
    }
    return "";
}

// Remembers the first index of each key, so that checking n items for
// duplicates costs O(n log n) comparisons, not O(n^2).
template <typename Key>
class FirstIndex {
  public:
    // The index of an earlier item with `key`; else records `index` as its
    // first and returns nothing.
    std::optional<size_t> earlier(Key key, size_t index) {
        auto [it, inserted] = first_.try_emplace(std::move(key), index);
        if (inserted) return std::nullopt;
        return it->second;
    }

  private:
    std::map<Key, size_t> first_;
};

std::string_view trim(std::string_view text) {
    const auto space = [](char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    };
    while (!text.empty() && space(text.front())) text.remove_prefix(1);
    while (!text.empty() && space(text.back())) text.remove_suffix(1);
    return text;
}

std::string number_text(const Value& value) {
    if (value.IsInt64()) return std::to_string(value.GetInt64());
    if (value.IsUint64()) return std::to_string(value.GetUint64());
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value.GetDouble());
    return buffer;
}

enum class NameRule { kDns1035Label, kDnsSubdomain };

// Decodes one object. Every method returns false after recording the first
// error (the object is then skipped whole: a half-decoded object is never
// stored). Not thread-safe; one Decoder per object.
class Decoder {
  public:
    explicit Decoder(const char* kind) : kind_(kind) {}

    const DecodeError& error() const { return error_; }
    DecodeError take_error() { return std::move(error_); }

    bool fail(const Path& path, std::string message) {
        error_ = DecodeError{object_, kind_, path.str(), std::move(message)};
        return false;
    }

    bool decode(const Value& value, Service& out);
    bool decode(const Value& value, EndpointSlice& out);
    bool decode(const Value& value, Node& out);
    // Only the metadata (the key, labels): what a DELETED event needs.
    bool decode_meta_only(const Value& value, ObjectMeta& out);

  private:
    // ---- typed field readers: absent and null leave `out` as it is.
    bool type_error(const Path& path, const char* want, const Value& got) {
        return fail(path, std::string("expected ") + want + ", got " + type_name(got));
    }
    bool get_object(const Value& parent, const Path& path, const char* key, const Value*& out) {
        out = member(parent, key);
        if (out && !out->IsObject()) return type_error(path.child(key), "an object", *out);
        return true;
    }
    // `max_items`: the most elements the array may hold (an API limit).
    bool get_array(const Value& parent, const Path& path, const char* key, const Value*& out,
                   size_t max_items = std::numeric_limits<size_t>::max()) {
        out = member(parent, key);
        if (out && !out->IsArray()) return type_error(path.child(key), "an array", *out);
        if (out && out->Size() > max_items) {
            return fail(path.child(key), "too many items: " + std::to_string(out->Size()) +
                                             " (at most " + std::to_string(max_items) + ")");
        }
        return true;
    }
    bool get_string(const Value& parent, const Path& path, const char* key, std::string_view& out) {
        const Value* value = member(parent, key);
        if (!value) return true;
        if (!value->IsString()) return type_error(path.child(key), "a string", *value);
        out = view(*value);
        return true;
    }
    bool get_bool(const Value& parent, const Path& path, const char* key, bool& out) {
        const Value* value = member(parent, key);
        if (!value) return true;
        if (!value->IsBool()) return type_error(path.child(key), "a boolean", *value);
        out = value->GetBool();
        return true;
    }
    bool as_integer(const Value& value, const Path& path, int64_t& out) {
        if (!value.IsNumber()) return type_error(path, "an integer", value);
        if (!value.IsInt64()) {
            return fail(path, "expected an integer, got " + number_text(value));
        }
        out = value.GetInt64();
        return true;
    }
    bool get_integer(const Value& parent, const Path& path, const char* key,
                     std::optional<int64_t>& out) {
        const Value* value = member(parent, key);
        if (!value) return true;
        int64_t number = 0;
        if (!as_integer(*value, path.child(key), number)) return false;
        out = number;
        return true;
    }
    // A port field: 1-65535, or also 0 when zero_ok (nodePort: none).
    bool get_port(const Value& parent, const Path& path, const char* key, bool zero_ok,
                  std::optional<uint16_t>& out) {
        std::optional<int64_t> number;
        if (!get_integer(parent, path, key, number)) return false;
        if (!number) return true;
        if (*number == 0 && zero_ok) {
            out = 0;
            return true;
        }
        if (*number < 1 || *number > 65535) {
            return fail(path.child(key),
                        "port " + std::to_string(*number) + " out of range 1-65535");
        }
        out = static_cast<uint16_t>(*number);
        return true;
    }
    bool get_string_map(const Value& parent, const Path& path, const char* key,
                        std::map<std::string, std::string>& out) {
        const Value* object = nullptr;
        if (!get_object(parent, path, key, object)) return false;
        if (!object) return true;
        const Path here = path.child(key);
        for (const auto& entry : object->GetObject()) {
            if (!entry.value.IsString()) {
                return type_error(here.map_key(view(entry.name)), "a string", entry.value);
            }
            // Go marshals maps with sorted keys, so the hint is usually right.
            out.emplace_hint(out.end(), view(entry.name), view(entry.value));
        }
        return true;
    }
    // An optional string that, when not empty, must satisfy `valid`.
    bool get_name(const Value& parent, const Path& path, const char* key,
                  bool (*valid)(std::string_view), const char* rule, std::string& out) {
        std::string_view text;
        if (!get_string(parent, path, key, text)) return false;
        if (!text.empty() && !valid(text)) {
            return fail(path.child(key),
                        "invalid " + std::string(key) + " " + quoted(text) + ": must be " + rule);
        }
        out = std::string(text);
        return true;
    }
    // Calls each(object, path) when the optional object `key` is present.
    template <typename F>
    bool with_object(const Value& parent, const Path& path, const char* key, F&& each) {
        const Value* object = nullptr;
        if (!get_object(parent, path, key, object)) return false;
        return !object || each(*object, path.child(key));
    }
    // Calls each(item, path, index) for every element of the optional array
    // `key`, whose elements must be objects.
    template <typename F>
    bool for_each_object(const Value& parent, const Path& path, const char* key, F&& each,
                         size_t max_items = std::numeric_limits<size_t>::max()) {
        const Value* array = nullptr;
        if (!get_array(parent, path, key, array, max_items)) return false;
        if (!array) return true;
        const Path list_path = path.child(key);
        for (rapidjson::SizeType i = 0; i < array->Size(); ++i) {
            const Value& item = (*array)[i];
            const Path here = list_path.at(i);
            if (!item.IsObject()) return type_error(here, "an object", item);
            if (!each(item, here, static_cast<size_t>(i))) return false;
        }
        return true;
    }
    bool get_traffic_policy(const Value& parent, const Path& path, const char* key,
                            bool allow_global, TrafficPolicy& out) {
        std::string_view text;
        if (!get_string(parent, path, key, text)) return false;
        if (text.empty() || text == "Cluster" || (allow_global && text == "Global")) {
            out = TrafficPolicy::kCluster;
        } else if (text == "Local") {
            out = TrafficPolicy::kLocal;
        } else {
            return fail(path.child(key),
                        "unknown traffic policy " + quoted(text) + " (want Cluster or Local)");
        }
        return true;
    }
    bool get_protocol(const Value& parent, const Path& path, Protocol& out) {
        std::string_view text;
        if (!get_string(parent, path, "protocol", text)) return false;
        if (text.empty() || text == "TCP") {
            out = Protocol::kTCP;
        } else if (text == "UDP") {
            out = Protocol::kUDP;
        } else if (text == "SCTP") {
            out = Protocol::kSCTP;
        } else {
            return fail(path.child("protocol"),
                        "unknown protocol " + quoted(text) + " (want TCP, UDP or SCTP)");
        }
        return true;
    }
    bool ip_address(const Value& value, const Path& path, IpAddress& out) {
        if (!value.IsString()) return type_error(path, "a string", value);
        auto parsed = parse_ip(view(value));
        if (!parsed) return fail(path, "invalid IP address " + quoted(view(value)));
        out = *parsed;
        return true;
    }
    bool ip_list(const Value& parent, const Path& path, const char* key,
                 std::vector<IpAddress>& out) {
        const Value* array = nullptr;
        if (!get_array(parent, path, key, array)) return false;
        if (!array) return true;
        const Path here = path.child(key);
        for (rapidjson::SizeType i = 0; i < array->Size(); ++i) {
            IpAddress address;
            if (!ip_address((*array)[i], here.at(i), address)) return false;
            out.push_back(address);
        }
        return true;
    }

    bool meta(const Value& value, NameRule rule, bool namespaced, ObjectMeta& out);
    bool check_kind(const Value& value);
    bool cluster_ips(const Value& spec, const Path& path, Service& out);
    bool ip_families(const Value& spec, const Path& path, Service& out);
    bool service_ports(const Value& spec, const Path& path, Service& out);
    bool service_port(const Value& value, const Path& path, ServicePort& out);
    bool session_affinity(const Value& spec, const Path& path, Service& out);
    bool load_balancer_status(const Value& value, Service& out);
    bool endpoint(const Value& value, const Path& path, AddressType type, Endpoint& out);
    bool endpoint_hints(const Value& value, const Path& path, Endpoint& out);
    bool endpoint_ports(const Value& value, EndpointSlice& out);

    const char* kind_;
    std::string object_ = kUnknownObject;
    DecodeError error_;
};

bool Decoder::check_kind(const Value& value) {
    std::string_view kind;
    if (!get_string(value, Path{}, "kind", kind)) return false;
    if (!kind.empty() && kind != kind_) {
        return fail(Path{}.child("kind"),
                    "expected kind " + std::string(kind_) + ", got " + quoted(kind));
    }
    return true;
}

bool Decoder::meta(const Value& value, NameRule rule, bool namespaced, ObjectMeta& out) {
    const Path root;
    if (!value.IsObject()) return type_error(root, "an object", value);
    const Value* metadata = nullptr;
    if (!get_object(value, root, "metadata", metadata)) return false;
    const Path path = root.child("metadata");
    if (!metadata) return fail(path, "required field is missing");

    // Name the object for error messages before validating the name, so that
    // even a bad name is reported with the text the user wrote.
    const Value* name = member(*metadata, "name");
    const Value* ns = member(*metadata, "namespace");
    // Kubernetes defaults an absent namespace to "default".
    const std::string_view ns_text = ns && ns->IsString() ? view(*ns) : std::string_view();
    const std::string_view ns_used = ns_text.empty() ? "default" : ns_text;
    if (name && name->IsString() && name->GetStringLength() > 0) {
        object_ = namespaced ? printable(ns_used, 64) + "/" + printable(view(*name), 256)
                             : printable(view(*name), 256);
    }

    if (!name) return fail(path.child("name"), "required field is missing");
    if (!name->IsString()) return type_error(path.child("name"), "a string", *name);
    const std::string_view name_text = view(*name);
    if (rule == NameRule::kDns1035Label && !is_dns1035_label(name_text)) {
        return fail(path.child("name"),
                    "invalid name " + quoted(name_text) +
                        ": must be an RFC 1035 label (at most 63 lowercase alphanumerics or "
                        "'-', starting with a letter, ending with an alphanumeric)");
    }
    if (rule == NameRule::kDnsSubdomain && !is_dns_subdomain(name_text)) {
        return fail(path.child("name"),
                    "invalid name " + quoted(name_text) +
                        ": must be an RFC 1123 subdomain (at most 253 characters, "
                        "dot-separated lowercase labels)");
    }
    out.name = std::string(name_text);
    if (namespaced) {
        if (ns && !ns->IsString()) return type_error(path.child("namespace"), "a string", *ns);
        if (!is_dns_label(ns_used)) {
            return fail(path.child("namespace"),
                        "invalid namespace " + quoted(ns_used) + ": must be an RFC 1123 label");
        }
        out.ns = std::string(ns_used);
    }
    std::string_view text;
    if (!get_string(*metadata, path, "uid", text)) return false;
    out.uid = std::string(text);
    text = {};
    if (!get_string(*metadata, path, "resourceVersion", text)) return false;
    out.resource_version = std::string(text);
    if (!get_string_map(*metadata, path, "labels", out.labels)) return false;
    if (!get_string_map(*metadata, path, "annotations", out.annotations)) return false;
    // kubectl's bookkeeping copy of the whole object: often the largest
    // field by far, and nothing downstream reads it.
    out.annotations.erase(kLastAppliedAnnotation);
    return true;
}

bool Decoder::decode_meta_only(const Value& value, ObjectMeta& out) {
    const bool namespaced = std::string_view(kind_) != "Node";
    const NameRule rule =
        std::string_view(kind_) == "Service" ? NameRule::kDns1035Label : NameRule::kDnsSubdomain;
    return meta(value, rule, namespaced, out);
}

// ---------------------------------------------------------------- Service

bool Decoder::decode(const Value& value, Service& out) {
    if (!meta(value, NameRule::kDns1035Label, true, out.meta)) return false;
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
                    "unknown Service type " + quoted(type) +
                        " (want ClusterIP, NodePort, LoadBalancer or ExternalName)");
    }

    if (!cluster_ips(*spec, path, out)) return false;
    if (!ip_families(*spec, path, out)) return false;
    if (!service_ports(*spec, path, out)) return false;

    if (!get_string_map(*spec, path, "selector", out.selector)) return false;
    // An empty selector is stored as nil by the API server: no selector.
    out.has_selector = !out.selector.empty();

    if (!ip_list(*spec, path, "externalIPs", out.external_ips)) return false;

    std::string_view external_name;
    if (!get_string(*spec, path, "externalName", external_name)) return false;
    if (out.type == ServiceType::kExternalName) {
        if (!external_name.empty() && external_name.back() == '.') external_name.remove_suffix(1);
        if (external_name.empty()) {
            return fail(path.child("externalName"), "required for type ExternalName");
        }
        if (!is_dns_subdomain(external_name)) {
            return fail(path.child("externalName"), "invalid DNS name " + quoted(external_name) +
                                                        ": must be an RFC 1123 subdomain");
        }
        out.external_name = std::string(external_name);
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
                return fail(here.at(i), "invalid CIDR " + quoted(view(range)));
            }
            out.load_balancer_source_ranges.push_back(*prefix);
        }
    }

    if (!get_bool(*spec, path, "publishNotReadyAddresses", out.publish_not_ready_addresses)) {
        return false;
    }
    std::string_view distribution;
    if (!get_string(*spec, path, "trafficDistribution", distribution)) return false;
    out.traffic_distribution = std::string(distribution);

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
            return fail(list_path.at(0),
                        quoted(texts[0]) + " differs from spec.clusterIP " + quoted(cluster_ip));
        }
    }
    const bool from_list = !texts.empty();
    if (!from_list && !cluster_ip.empty()) texts.push_back(cluster_ip);
    auto where = [&](size_t i) { return from_list ? list_path.at(i) : path.child("clusterIP"); };

    if (texts.size() > 2) {
        return fail(list_path,
                    "at most 2 addresses (one per family), got " + std::to_string(texts.size()));
    }
    if (!texts.empty() && texts[0] == "None") {
        if (texts.size() > 1) return fail(list_path.at(1), "a headless Service has no other IPs");
        out.headless = out.type != ServiceType::kExternalName;
        return true;
    }
    std::vector<IpAddress> ips;
    for (size_t i = 0; i < texts.size(); ++i) {
        auto ip = parse_ip(texts[i]);
        if (!ip) return fail(where(i), "invalid IP address " + quoted(texts[i]));
        ips.push_back(*ip);
    }
    if (ips.size() == 2 && ips[0].family() == ips[1].family()) {
        return fail(list_path.at(1), std::string("second cluster IP has the same family (") +
                                         to_string(ips[0].family()) + ") as the first");
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
        return fail(here, "at most 2 families, got " + std::to_string(list->Size()));
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
            return fail(here.at(i),
                        "unknown IP family " + quoted(view(item)) + " (want IPv4 or IPv6)");
        }
        if (!out.ip_families.empty() && out.ip_families[0] == family) {
            return fail(here.at(i), std::string("duplicate family ") + to_string(family));
        }
        if (i < out.cluster_ips.size() && out.cluster_ips[i].family() != family) {
            return fail(here.at(i), std::string(to_string(family)) + " does not match cluster IP " +
                                        out.cluster_ips[i].to_string());
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
                    return fail(here, "invalid port name " + quoted(text) +
                                          ": must be an IANA service name (at most 15 "
                                          "lowercase alphanumerics or '-', with a letter)");
                }
                out.target_port = IntOrString{true, 0, std::string(text)};
            }
        } else if (target->IsNumber()) {
            int64_t number = 0;
            if (!as_integer(*target, here, number)) return false;
            if (number < 0 || number > 65535) {
                return fail(here, "port " + std::to_string(number) + " out of range 1-65535");
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
            return fail(item.child("name"), "duplicate port name " + quoted(port.name) +
                                                " (also spec.ports[" + std::to_string(*j) + "])");
        }
        if (auto j = numbers.earlier({port.port, port.protocol}, i)) {
            return fail(item, "duplicate port " + std::to_string(port.port) + "/" +
                                  to_string(port.protocol) + " (also spec.ports[" +
                                  std::to_string(*j) + "])");
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
        return fail(path.child("sessionAffinity"),
                    "unknown session affinity " + quoted(affinity) + " (want None or ClientIP)");
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
                        return fail(
                            client_path.child("timeoutSeconds"),
                            "timeout " + std::to_string(*timeout) + " out of range 1-86400");
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
                        "unknown ipMode " + quoted(mode) + " (want VIP or Proxy)");
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

// ---------------------------------------------------------- EndpointSlice

bool Decoder::decode(const Value& value, EndpointSlice& out) {
    if (!meta(value, NameRule::kDnsSubdomain, true, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;

    auto label = out.meta.labels.find(kServiceNameLabel);
    if (label != out.meta.labels.end() && !label->second.empty()) {
        if (!is_dns_label(label->second)) {
            return fail(
                root.child("metadata").child("labels").map_key(kServiceNameLabel),
                "invalid Service name " + quoted(label->second) + ": must be an RFC 1123 label");
        }
        out.service_name = label->second;
    }

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
        return fail(type_path,
                    "unknown addressType " + quoted(view(*type)) + " (want IPv4, IPv6 or FQDN)");
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
                return fail(here, "invalid FQDN " + quoted(text) +
                                      ": must be an RFC 1123 subdomain (addressType FQDN)");
            }
            continue;
        }
        auto ip = parse_ip(text);
        if (!ip) return fail(here, "invalid IP address " + quoted(text));
        const IpFamily want = type == AddressType::kIPv4 ? IpFamily::kV4 : IpFamily::kV6;
        if (ip->family() != want) {
            return fail(here, "address " + quoted(text) + " is not " + to_string(want) +
                                  " (addressType " + to_string(type) + ")");
        }
        if (std::string why = special_endpoint_range(*ip); !why.empty()) {
            return fail(here, "address " + quoted(text) + " " + why);
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
    std::string node_name, zone;
    if (!get_name(value, path, "hostname", &is_dns_label, "an RFC 1123 label", out.hostname) ||
        !get_name(value, path, "nodeName", &is_dns_subdomain, "an RFC 1123 subdomain", node_name) ||
        !get_name(value, path, "zone", &is_label_value, "a Kubernetes label value", zone)) {
        return false;
    }
    out.node_name = node_name;
    out.zone = zone;
    if (!endpoint_hints(value, path, out)) return false;
    return with_object(value, path, "targetRef", [&](const Value& ref, const Path& here) {
        std::string_view kind, ns, name;
        if (!get_string(ref, here, "kind", kind) || !get_string(ref, here, "namespace", ns) ||
            !get_string(ref, here, "name", name)) {
            return false;
        }
        out.target_ref = ObjectReference{Symbol(kind), Symbol(ns), std::string(name)};
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
                return fail(here.child("name"), "duplicate port name " + quoted(port.name) +
                                                    " (also ports[" + std::to_string(*j) + "])");
            }
            if (!get_protocol(item, here, port.protocol)) return false;
            if (!get_port(item, here, "port", false, port.port)) return false;
            out.ports.push_back(std::move(port));
            return true;
        },
        kMaxSlicePorts);
}

// ------------------------------------------------------------------- Node

bool Decoder::decode(const Value& value, Node& out) {
    if (!meta(value, NameRule::kDnsSubdomain, false, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;
    // metadata.deletionTimestamp: set while the Node is being deleted.
    bool metadata_ok = with_object(value, root, "metadata", [&](const Value& m, const Path& path) {
        std::string_view text;
        if (!get_string(m, path, "deletionTimestamp", text)) return false;
        if (text.empty()) return true;
        if (!parse_rfc3339(text)) {
            return fail(path.child("deletionTimestamp"),
                        "invalid time " + quoted(text) + ": must be RFC 3339");
        }
        out.being_deleted = true;
        return true;
    });
    if (!metadata_ok) return false;
    auto taint = [&](const Value& item, const Path& here, size_t) {
        Taint decoded;
        std::string_view key, text, effect;
        if (!get_string(item, here, "key", key) || !get_string(item, here, "value", text) ||
            !get_string(item, here, "effect", effect)) {
            return false;
        }
        if (key.empty()) return fail(here.child("key"), "required field is missing");
        if (!is_qualified_name(key)) {
            return fail(here.child("key"),
                        "invalid key " + quoted(key) +
                            ": must be a qualified name ([prefix/]name, name at most 63 "
                            "alphanumerics, '-', '_' or '.')");
        }
        if (!text.empty() && !is_label_value(text)) {
            return fail(here.child("value"),
                        "invalid value " + quoted(text) + ": must be a Kubernetes label value");
        }
        if (effect.empty()) return fail(here.child("effect"), "required field is missing");
        if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
            return fail(here.child("effect"),
                        "unknown effect " + quoted(effect) +
                            " (want NoSchedule, PreferNoSchedule or NoExecute)");
        }
        out.taints.push_back(Taint{std::string(key), std::string(text), std::string(effect)});
        return true;
    };
    // A pod CIDR: host bits are cleared, as Kubernetes' ParseCIDRSloppy
    // reads them; at most one per family.
    auto pod_cidr = [&](const Value& item, const Path& here) {
        if (!item.IsString()) return type_error(here, "a string", item);
        const std::string_view text = view(item);
        auto prefix = Prefix::parse(text, true);
        if (!prefix || !parse_ip(text.substr(0, text.find('/')))) {
            return fail(here, "invalid CIDR " + quoted(text));
        }
        for (const auto& other : out.pod_cidrs) {
            if (other.family() == prefix->family()) {
                return fail(here, "a second " + std::string(to_string(prefix->family())) +
                                      " CIDR " + quoted(text) + ": at most one per family");
            }
        }
        out.pod_cidrs.push_back(*prefix);
        return true;
    };
    bool spec_ok = with_object(value, root, "spec", [&](const Value& spec, const Path& path) {
        if (!for_each_object(spec, path, "taints", taint)) return false;
        const Value* cidrs = nullptr;
        if (!get_array(spec, path, "podCIDRs", cidrs)) return false;
        if (cidrs && !cidrs->Empty()) {
            const Path here = path.child("podCIDRs");
            for (rapidjson::SizeType i = 0; i < cidrs->Size(); ++i) {
                if (!pod_cidr((*cidrs)[i], here.at(i))) return false;
            }
            return true;
        }
        // Clusters older than dual-stack set only the singular field.
        const Value* single = member(spec, "podCIDR");
        return !single || pod_cidr(*single, path.child("podCIDR"));
    });
    if (!spec_ok) return false;
    auto address = [&](const Value& item, const Path& here, size_t) {
        std::string_view type, text;
        if (!get_string(item, here, "type", type)) return false;
        if (!get_string(item, here, "address", text)) return false;
        if (type.empty()) return fail(here.child("type"), "required field is missing");
        if (text.empty()) return fail(here.child("address"), "required field is missing");
        // Only the IP types are read as addresses; Hostname and
        // InternalDNS entries are names and kept as written.
        if ((type == "InternalIP" || type == "ExternalIP") && !parse_ip(text)) {
            return fail(here.child("address"), "invalid IP address " + quoted(text));
        }
        out.addresses.push_back(NodeAddress{std::string(type), std::string(text)});
        return true;
    };
    return with_object(value, root, "status", [&](const Value& status, const Path& path) {
        return for_each_object(status, path, "addresses", address);
    });
}

// -------------------------------------------------------------- dispatch

template <typename T>
Result<T> decode_one(const Value& value, const char* kind) {
    Decoder decoder(kind);
    T object;
    if (!decoder.decode(value, object)) {
        return make_error(ErrorCode::kInvalidArgument, decoder.error().describe());
    }
    return object;
}

enum class ObjectKind { kService, kEndpointSlice, kNode, kOther };

ObjectKind kind_of(std::string_view kind) {
    if (kind == "Service") return ObjectKind::kService;
    if (kind == "EndpointSlice") return ObjectKind::kEndpointSlice;
    if (kind == "Node") return ObjectKind::kNode;
    return ObjectKind::kOther;
}

// The name of an object that failed before the Decoder could name it.
std::string raw_object_name(const Value& value) {
    if (!value.IsObject()) return kUnknownObject;
    const Value* metadata = member(value, "metadata");
    if (!metadata || !metadata->IsObject()) return kUnknownObject;
    const Value* name = member(*metadata, "name");
    if (!name || !name->IsString() || name->GetStringLength() == 0) return kUnknownObject;
    const Value* ns = member(*metadata, "namespace");
    if (ns && ns->IsString() && ns->GetStringLength() > 0) {
        return printable(view(*ns), 64) + "/" + printable(view(*name), 256);
    }
    return printable(view(*name), 256);
}

template <typename T>
void decode_append(const Value& value, const char* kind, std::vector<T>& objects,
                   std::vector<DecodeError>& errors) {
    Decoder decoder(kind);
    objects.emplace_back();
    if (!decoder.decode(value, objects.back())) {
        objects.pop_back();
        errors.push_back(decoder.take_error());
    }
}

// Decodes one item of a document into `out`; kOther is ignored.
void decode_into(const Value& value, ObjectKind kind, DecodedDocument& out) {
    switch (kind) {
        case ObjectKind::kService:
            return decode_append(value, "Service", out.objects.services, out.errors);
        case ObjectKind::kEndpointSlice:
            return decode_append(value, "EndpointSlice", out.objects.endpoint_slices, out.errors);
        case ObjectKind::kNode:
            return decode_append(value, "Node", out.objects.nodes, out.errors);
        case ObjectKind::kOther:
            return;
    }
}

template <typename T>
Result<AnyObject> to_any(Result<T> result) {
    if (!result) return result.error();
    return AnyObject(std::move(*result));
}

// The object with its metadata only (what a deletion needs); nullopt when
// even the metadata is invalid.
template <typename T>
std::optional<AnyObject> metadata_only(const Value& value, const char* kind) {
    T object;
    if (!Decoder(kind).decode_meta_only(value, object.meta)) return std::nullopt;
    if constexpr (std::is_same_v<T, EndpointSlice>) {
        auto label = object.meta.labels.find(kServiceNameLabel);
        if (label != object.meta.labels.end()) object.service_name = label->second;
    }
    return AnyObject(std::move(object));
}

// Parses `json` in situ in `buffer` (a NUL-terminated copy).
Result<void> parse(std::string_view json, std::string& buffer, rapidjson::Document& document,
                   const char* what) {
    // A raw NUL is never valid JSON, and the in-situ parser would stop at it.
    if (const auto nul = json.find('\0'); nul != std::string_view::npos) {
        return make_error(
            ErrorCode::kInvalidArgument,
            std::string(what) + ": invalid JSON: NUL byte at offset " + std::to_string(nul));
    }
    buffer.assign(json.data(), json.size());
    // RapidJSON's UTF-8 check reads a lead byte's continuation bytes (up to
    // three) before it looks at them: a sequence cut short by the end of the
    // input reads the terminator and two bytes past it. Two more NULs keep
    // those reads inside the buffer (found by tests/fuzz/decode_fuzz.cpp).
    buffer.append(2, '\0');
    document.ParseInsitu<kParseFlags>(buffer.data());
    if (!document.HasParseError()) return {};
    const size_t offset = document.GetErrorOffset();
    const size_t line =
        1 + std::count(json.begin(), json.begin() + std::min(offset, json.size()), '\n');
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(what) + ": invalid JSON at line " + std::to_string(line) +
                          " (offset " + std::to_string(offset) +
                          "): " + rapidjson::GetParseError_En(document.GetParseError()));
}

}  // namespace

std::string DecodeError::describe() const {
    std::string out;
    if (!kind.empty()) out = kind + " ";
    out += object;
    out += ": ";
    if (!path.empty()) out += path + ": ";
    out += message;
    return out;
}

Result<Service> decode_service(const Value& value) {
    return decode_one<Service>(value, "Service");
}

Result<EndpointSlice> decode_endpoint_slice(const Value& value) {
    return decode_one<EndpointSlice>(value, "EndpointSlice");
}

Result<Node> decode_node(const Value& value) {
    return decode_one<Node>(value, "Node");
}

Result<AnyObject> decode_object(const Value& value) {
    const Value* kind = value.IsObject() ? member(value, "kind") : nullptr;
    auto failure = [&](const std::string& message) {
        DecodeError error{raw_object_name(value), "", "kind", message};
        return make_error(ErrorCode::kInvalidArgument, error.describe());
    };
    if (!value.IsObject()) {
        DecodeError error{kUnknownObject, "", "",
                          std::string("expected an object, got ") + type_name(value)};
        return make_error(ErrorCode::kInvalidArgument, error.describe());
    }
    if (!kind) return failure("required field is missing");
    if (!kind->IsString())
        return failure(std::string("expected a string, got ") + type_name(*kind));
    switch (kind_of(view(*kind))) {
        case ObjectKind::kService:
            return to_any(decode_service(value));
        case ObjectKind::kEndpointSlice:
            return to_any(decode_endpoint_slice(value));
        case ObjectKind::kNode:
            return to_any(decode_node(value));
        case ObjectKind::kOther:
            break;
    }
    return failure("unsupported kind " + quoted(view(*kind)) +
                   " (want Service, EndpointSlice or Node)");
}

Result<DecodedDocument> decode_document(std::string_view json) {
    std::string buffer;
    rapidjson::Document document;
    if (auto parsed = parse(json, buffer, document, "document"); !parsed) return parsed.error();
    auto bad = [](const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument, "not a Kubernetes object or list: " + why);
    };
    if (!document.IsObject()) {
        return bad(std::string("expected a JSON object, got ") + type_name(document));
    }
    const Value* kind = member(document, "kind");
    if (!kind || !kind->IsString()) return bad("no \"kind\" string");
    const std::string_view kind_text = view(*kind);

    DecodedDocument out;
    const bool is_list = kind_text.size() >= 4 && kind_text.substr(kind_text.size() - 4) == "List";
    if (!is_list) {
        decode_into(document, kind_of(kind_text), out);
        return out;
    }

    if (const Value* metadata = member(document, "metadata"); metadata && metadata->IsObject()) {
        const Value* version = member(*metadata, "resourceVersion");
        if (version && version->IsString()) out.resource_version = std::string(view(*version));
        const Value* token = member(*metadata, "continue");
        if (token && token->IsString()) out.continue_token = std::string(view(*token));
    }
    const Value* items = member(document, "items");
    if (!items) return out;
    if (!items->IsArray()) {
        return bad(std::string("items: expected an array, got ") + type_name(*items));
    }
    // A typed list (ServiceList, as the API server sends it) omits the kind
    // of its items; a generic List (kubectl's) names each item's kind.
    const bool generic = kind_text == "List";
    const ObjectKind list_kind = kind_of(kind_text.substr(0, kind_text.size() - 4));
    if (!generic && list_kind == ObjectKind::kOther) return out;

    for (rapidjson::SizeType i = 0; i < items->Size(); ++i) {
        const Value& item = (*items)[i];
        const std::string where = "items[" + std::to_string(i) + "]";
        if (!item.IsObject()) {
            out.errors.push_back(
                DecodeError{kUnknownObject, "", where,
                            std::string("expected an object, got ") + type_name(item)});
            continue;
        }
        ObjectKind item_kind = list_kind;
        const Value* item_kind_value = member(item, "kind");
        if (generic) {
            if (!item_kind_value || !item_kind_value->IsString()) {
                out.errors.push_back(DecodeError{
                    raw_object_name(item), "", where + ".kind",
                    item_kind_value ? "expected a string" : "required field is missing"});
                continue;
            }
            item_kind = kind_of(view(*item_kind_value));
        }
        const size_t errors_before = out.errors.size();
        decode_into(item, item_kind, out);
        // Unnamed objects are located by their position in the list.
        if (out.errors.size() > errors_before && out.errors.back().object == kUnknownObject) {
            std::string& path = out.errors.back().path;
            path = path.empty() ? where : where + "." + path;
        }
    }
    return out;
}

Result<WatchEvent> decode_watch_event(std::string_view line) {
    std::string buffer;
    rapidjson::Document document;
    if (auto parsed = parse(line, buffer, document, "watch event"); !parsed) {
        return parsed.error();
    }
    auto bad = [](const std::string& path, const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument, "watch event: " + path + ": " + why);
    };
    if (!document.IsObject()) {
        return make_error(
            ErrorCode::kInvalidArgument,
            std::string("watch event: expected a JSON object, got ") + type_name(document));
    }
    const Value* type = member(document, "type");
    if (!type) return bad("type", "required field is missing");
    if (!type->IsString())
        return bad("type", std::string("expected a string, got ") + type_name(*type));
    const Value* object = member(document, "object");
    if (!object) return bad("object", "required field is missing");
    if (!object->IsObject()) {
        return bad("object", std::string("expected an object, got ") + type_name(*object));
    }

    WatchEvent event;
    const std::string_view type_text = view(*type);
    if (type_text == "ERROR") {
        event.type = WatchEvent::Type::kError;
        const Value* code = member(*object, "code");
        if (code && code->IsInt()) event.status_code = code->GetInt();
        const Value* message = member(*object, "message");
        if (message && message->IsString()) event.status_message = std::string(view(*message));
        const Value* reason = member(*object, "reason");
        // client-go treats reason Expired/Gone like code 410 (relist).
        if (event.status_code == 0 && reason && reason->IsString() &&
            (view(*reason) == "Expired" || view(*reason) == "Gone")) {
            event.status_code = 410;
        }
        return event;
    }
    if (type_text == "BOOKMARK") {
        event.type = WatchEvent::Type::kBookmark;
        const Value* metadata = member(*object, "metadata");
        const Value* version =
            metadata && metadata->IsObject() ? member(*metadata, "resourceVersion") : nullptr;
        if (!version || !version->IsString()) {
            return bad("object.metadata.resourceVersion", "a bookmark needs a resourceVersion");
        }
        event.resource_version = std::string(view(*version));
        return event;
    }
    if (type_text == "ADDED") {
        event.type = WatchEvent::Type::kAdded;
    } else if (type_text == "MODIFIED") {
        event.type = WatchEvent::Type::kModified;
    } else if (type_text == "DELETED") {
        event.type = WatchEvent::Type::kDeleted;
    } else {
        return bad("type", "unknown event type " + quoted(type_text) +
                               " (want ADDED, MODIFIED, DELETED, BOOKMARK or ERROR)");
    }

    auto decoded = decode_object(*object);
    if (!decoded) {
        // Deleting needs only the key, and so does dropping an object whose
        // new version fails validation: both remove what the store holds.
        const std::string why = decoded.error().message;
        const Value* kind = member(*object, "kind");
        const ObjectKind which =
            kind && kind->IsString() ? kind_of(view(*kind)) : ObjectKind::kOther;
        std::optional<AnyObject> partial;
        switch (which) {
            case ObjectKind::kService:
                partial = metadata_only<Service>(*object, "Service");
                break;
            case ObjectKind::kEndpointSlice:
                partial = metadata_only<EndpointSlice>(*object, "EndpointSlice");
                break;
            case ObjectKind::kNode:
                partial = metadata_only<Node>(*object, "Node");
                break;
            case ObjectKind::kOther:
                break;
        }
        if (partial) {
            decoded = std::move(*partial);
            if (event.type != WatchEvent::Type::kDeleted) event.rejected = why;
        }
    }
    if (!decoded) return decoded.error();
    event.object = std::move(*decoded);
    event.resource_version =
        std::visit([](const auto& o) { return o.meta.resource_version; }, event.object);
    return event;
}

bool is_dns_label(std::string_view text) {
    if (text.empty() || text.size() > 63) return false;
    if (!is_alnum_lower(text.front()) || !is_alnum_lower(text.back())) return false;
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return is_alnum_lower(c) || c == '-'; });
}

bool is_dns_subdomain(std::string_view text) {
    if (text.empty() || text.size() > 253) return false;
    while (true) {
        const size_t dot = text.find('.');
        if (!is_dns_label(text.substr(0, dot))) return false;
        if (dot == std::string_view::npos) return true;
        text.remove_prefix(dot + 1);
    }
}

}  // namespace sb::watch
