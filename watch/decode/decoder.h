// The Decoder (private to watch/decode/): decodes one object of a known kind,
// field by field, with the typed readers every kind's decoder uses. Its
// per-kind decode() methods are in service.cpp, endpoint_slice.cpp, node.cpp,
// pod.cpp and service_cidr.cpp; the metadata, shared by every kind, in decoder.cpp. It knows a
// kind only by its KindRules, so that the kind table (kinds.h), whose rows
// point at Decoder code, sits above it.
#pragma once

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "watch/decode/json.h"
#include "watch/decode/syntax.h"
#include "watch/decoded.h"
#include "watch/objects.h"

namespace sb::watch::decoding {

// What metadata.name must be.
enum class NameRule {
    kDns1035Label,  // Service
    kDnsSubdomain,  // EndpointSlice, Node, Pod, ServiceCIDR
};

// What the Decoder reads of a kind: its "kind" and its metadata rules. The
// kind table's rows (KindInfo, kinds.h) are these plus the kind's functions.
struct KindRules {
    std::string_view name;  // the JSON "kind"
    bool namespaced;        // metadata.namespace is read (and defaults to "default")
    NameRule name_rule;
    // metadata.labels and .annotations are read (and validated) and kept.
    // Pods' are not: nothing reads them, and a node holds up to hundreds of
    // Pods whose labels would cost more than the rest of the Pod.
    bool keeps_labels;
};

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

// Decodes one object. Every method returns false after recording the first
// error (the object is then skipped whole: a half-decoded object is never
// stored). Not thread-safe; one Decoder per object.
class Decoder {
  public:
    explicit Decoder(const KindRules& kind) : kind_(kind) {}

    const DecodeError& error() const { return error_; }
    DecodeError take_error() { return std::move(error_); }

    bool fail(const Path& path, std::string message) {
        error_ = DecodeError{object_, std::string(kind_.name), path.str(), std::move(message)};
        return false;
    }

    bool decode(const Value& value, Service& out);
    bool decode(const Value& value, EndpointSlice& out);
    bool decode(const Value& value, Node& out);
    bool decode(const Value& value, Pod& out);
    bool decode(const Value& value, ServiceCIDR& out);
    // The metadata (the key, resourceVersion, and the labels and
    // annotations of a kind that keeps them) with the name and namespace
    // rules of the kind. Alone, it is what a DELETED event needs.
    bool decode_meta(const Value& value, ObjectMeta& out);

  private:
    // ---- typed field readers: absent and null leave `out` as it is.
    bool type_error(const Path& path, const char* want, const Value& got) {
        return fail(path, fmt::format("expected {}, got {}", want, type_name(got)));
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
            return fail(path.child(key),
                        fmt::format("too many items: {} (at most {})", out->Size(), max_items));
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
            return fail(path, fmt::format("expected an integer, got {}", number_text(value)));
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
            return fail(path.child(key), fmt::format("port {} out of range 1-65535", *number));
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
                        fmt::format("invalid {} {}: must be {}", key, quoted(text), rule));
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
            return fail(
                path.child(key),
                fmt::format("unknown traffic policy {} (want Cluster or Local)", quoted(text)));
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
                        fmt::format("unknown protocol {} (want TCP, UDP or SCTP)", quoted(text)));
        }
        return true;
    }
    bool ip_address(const Value& value, const Path& path, IpAddress& out) {
        if (!value.IsString()) return type_error(path, "a string", value);
        auto parsed = parse_ip(view(value));
        if (!parsed) return fail(path, fmt::format("invalid IP address {}", quoted(view(value))));
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

    // The object's "kind", when present, must be the Decoder's.
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
    bool pod_dns_config(const Value& value, const Path& path, PodDnsConfig& out);
    bool pod_ips(const Value& status, const Path& path, Pod& out);

    const KindRules& kind_;
    std::string object_ = kUnknownObject;
    DecodeError error_;
};

}  // namespace sb::watch::decoding
