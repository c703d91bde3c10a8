// Decoding a Pod (docs/decoding.md, "Pod"): only what names a DNS client.
// Containers, volumes and the rest of the spec are not read. Neither are the
// labels and annotations (the kind table's keeps_labels): the Pod's meta
// holds its key, resourceVersion and creation time only, which keeps a
// node's Pods a few hundred bytes each (docs/store.md).
#include "watch/decode/decoder.h"

#include <fmt/format.h>

#include "base/timestamp.h"

namespace sb::watch::decoding {

namespace {

// The API server's limits on spec.dnsConfig (validatePodDNSConfig:
// MaxDNSNameservers, MaxDNSSearchPaths, MaxDNSSearchListChars), from libc's.
constexpr size_t kMaxNameservers = 3;
constexpr size_t kMaxSearches = 32;
constexpr size_t kMaxSearchListChars = 2048;
// Ours: the API sets no bound on resolver options, and glibc knows about a
// dozen.
constexpr size_t kMaxOptions = 32;
constexpr size_t kMaxOptionText = 256;
// One address per family (validatePodIPs).
constexpr size_t kMaxPodIps = 2;

}  // namespace

bool Decoder::pod_dns_config(const Value& value, const Path& path, PodDnsConfig& out) {
    const Value* nameservers = nullptr;
    if (!get_array(value, path, "nameservers", nameservers, kMaxNameservers)) return false;
    if (nameservers) {
        const Path here = path.child("nameservers");
        for (rapidjson::SizeType i = 0; i < nameservers->Size(); ++i) {
            IpAddress address;
            if (!ip_address((*nameservers)[i], here.at(i), address)) return false;
            out.nameservers.emplace_back(view((*nameservers)[i]));
        }
    }
    const Value* searches = nullptr;
    if (!get_array(value, path, "searches", searches, kMaxSearches)) return false;
    if (searches) {
        const Path here = path.child("searches");
        size_t joined = 0;  // the length of the list joined with spaces, as the API counts it
        for (rapidjson::SizeType i = 0; i < searches->Size(); ++i) {
            const Value& item = (*searches)[i];
            if (!item.IsString()) return type_error(here.at(i), "a string", item);
            const std::string_view text = view(item);
            joined += text.size() + (i > 0 ? 1 : 0);
            if (joined > kMaxSearchListChars) {
                return fail(here, fmt::format("search list longer than {} characters",
                                              kMaxSearchListChars));
            }
            // A trailing dot (an absolute name) is allowed, as the API allows it.
            const std::string_view name =
                !text.empty() && text.back() == '.' ? text.substr(0, text.size() - 1) : text;
            if (!is_dns_subdomain(name)) {
                return fail(here.at(i),
                            fmt::format("invalid search domain {}: must be an RFC 1123 subdomain",
                                        quoted(text)));
            }
            out.searches.emplace_back(text);
        }
    }
    auto option = [&](const Value& item, const Path& here, size_t) {
        std::string_view name;
        if (!get_string(item, here, "name", name)) return false;
        if (name.empty()) return fail(here.child("name"), "required field is missing");
        if (name.size() > kMaxOptionText) {
            return fail(here.child("name"),
                        fmt::format("longer than {} characters", kMaxOptionText));
        }
        PodDnsOption decoded{std::string(name), std::nullopt};
        // Present but empty ("ndots:") differs from absent (a flag).
        if (const Value* text = member(item, "value")) {
            if (!text->IsString()) return type_error(here.child("value"), "a string", *text);
            if (text->GetStringLength() > kMaxOptionText) {
                return fail(here.child("value"),
                            fmt::format("longer than {} characters", kMaxOptionText));
            }
            decoded.value = std::string(view(*text));
        }
        out.options.push_back(std::move(decoded));
        return true;
    };
    return for_each_object(value, path, "options", option, kMaxOptions);
}

bool Decoder::pod_ips(const Value& status, const Path& path, Pod& out) {
    auto add = [&](const Value& text, const Path& here) {
        IpAddress address;
        if (!ip_address(text, here, address)) return false;
        for (const auto& other : out.pod_ips) {
            if (other.family() == address.family()) {
                return fail(here, fmt::format("a second {} address {}: at most one per family",
                                              address.family(), quoted(view(text))));
            }
        }
        out.pod_ips.push_back(address);
        return true;
    };
    auto item = [&](const Value& entry, const Path& here, size_t) {
        const Value* ip = member(entry, "ip");
        if (!ip) return fail(here.child("ip"), "required field is missing");
        return add(*ip, here.child("ip"));
    };
    if (!for_each_object(status, path, "podIPs", item, kMaxPodIps)) return false;
    if (!out.pod_ips.empty()) return true;
    // API servers before dual-stack set only the singular field.
    std::string_view single;
    if (!get_string(status, path, "podIP", single)) return false;
    return single.empty() || add(*member(status, "podIP"), path.child("podIP"));
}

bool Decoder::decode(const Value& value, Pod& out) {
    if (!decode_meta(value, out.meta)) return false;
    if (!check_kind(value)) return false;
    const Path root;
    bool metadata_ok = with_object(value, root, "metadata", [&](const Value& m, const Path& path) {
        std::string_view text;
        if (!get_string(m, path, "creationTimestamp", text)) return false;
        if (text.empty()) return true;
        auto created = parse_rfc3339(text);
        if (!created) {
            return fail(path.child("creationTimestamp"),
                        fmt::format("invalid time {}: must be RFC 3339", quoted(text)));
        }
        out.created = *created;
        return true;
    });
    if (!metadata_ok) return false;
    bool spec_ok = with_object(value, root, "spec", [&](const Value& spec, const Path& path) {
        if (!get_name(spec, path, "nodeName", is_dns_subdomain, "an RFC 1123 subdomain",
                      out.node_name)) {
            return false;
        }
        if (!get_bool(spec, path, "hostNetwork", out.host_network)) return false;
        std::string_view policy;
        if (!get_string(spec, path, "dnsPolicy", policy)) return false;
        if (policy.empty() || policy == "ClusterFirst") {
            out.dns_policy = DnsPolicy::kClusterFirst;
        } else if (policy == "ClusterFirstWithHostNet") {
            out.dns_policy = DnsPolicy::kClusterFirstWithHostNet;
        } else if (policy == "Default") {
            out.dns_policy = DnsPolicy::kDefault;
        } else if (policy == "None") {
            out.dns_policy = DnsPolicy::kNone;
        } else {
            return fail(path.child("dnsPolicy"),
                        fmt::format("unknown DNS policy {} (want ClusterFirst, "
                                    "ClusterFirstWithHostNet, Default or None)",
                                    quoted(policy)));
        }
        return with_object(spec, path, "dnsConfig", [&](const Value& config, const Path& here) {
            out.dns_config.emplace();
            return pod_dns_config(config, here, *out.dns_config);
        });
    });
    if (!spec_ok) return false;
    return with_object(value, root, "status", [&](const Value& status, const Path& path) {
        std::string_view phase;
        if (!get_string(status, path, "phase", phase)) return false;
        if (phase.empty() || phase == "Pending") {
            out.phase = PodPhase::kPending;
        } else if (phase == "Running") {
            out.phase = PodPhase::kRunning;
        } else if (phase == "Succeeded") {
            out.phase = PodPhase::kSucceeded;
        } else if (phase == "Failed") {
            out.phase = PodPhase::kFailed;
        } else if (phase == "Unknown") {
            out.phase = PodPhase::kUnknown;
        } else {
            return fail(path.child("phase"),
                        fmt::format("unknown phase {} (want Pending, Running, Succeeded, Failed "
                                    "or Unknown)",
                                    quoted(phase)));
        }
        return pod_ips(status, path, out);
    });
}

}  // namespace sb::watch::decoding
