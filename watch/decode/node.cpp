// Decoding a Node (docs/decoding.md, "Node").
#include "watch/decode/decoder.h"

#include <fmt/format.h>

#include "base/timestamp.h"

namespace sb::watch::decoding {

bool Decoder::decode(const Value& value, Node& out) {
    if (!decode_meta(value, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;
    // metadata.deletionTimestamp: set while the Node is being deleted.
    bool metadata_ok = with_object(value, root, "metadata", [&](const Value& m, const Path& path) {
        std::string_view text;
        if (!get_string(m, path, "deletionTimestamp", text)) return false;
        if (text.empty()) return true;
        if (!parse_rfc3339(text)) {
            return fail(path.child("deletionTimestamp"),
                        fmt::format("invalid time {}: must be RFC 3339", quoted(text)));
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
                        fmt::format("invalid key {}: must be a qualified name ([prefix/]name, "
                                    "name at most 63 alphanumerics, '-', '_' or '.')",
                                    quoted(key)));
        }
        if (!text.empty() && !is_label_value(text)) {
            return fail(
                here.child("value"),
                fmt::format("invalid value {}: must be a Kubernetes label value", quoted(text)));
        }
        if (effect.empty()) return fail(here.child("effect"), "required field is missing");
        if (effect != "NoSchedule" && effect != "PreferNoSchedule" && effect != "NoExecute") {
            return fail(here.child("effect"),
                        fmt::format("unknown effect {} (want NoSchedule, PreferNoSchedule or "
                                    "NoExecute)",
                                    quoted(effect)));
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
            return fail(here, fmt::format("invalid CIDR {}", quoted(text)));
        }
        for (const auto& other : out.pod_cidrs) {
            if (other.family() == prefix->family()) {
                return fail(here, fmt::format("a second {} CIDR {}: at most one per family",
                                              prefix->family(), quoted(text)));
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
            return fail(here.child("address"), fmt::format("invalid IP address {}", quoted(text)));
        }
        out.addresses.push_back(NodeAddress{std::string(type), std::string(text)});
        return true;
    };
    return with_object(value, root, "status", [&](const Value& status, const Path& path) {
        return for_each_object(status, path, "addresses", address);
    });
}

}  // namespace sb::watch::decoding
