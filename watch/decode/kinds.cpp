// The kind table, and decode_one for each of its kinds.
#include "watch/decode/kinds.h"

#include <utility>

namespace sb::watch::decoding {

template <typename T>
Result<T> decode_one(const Value& value) {
    Decoder decoder(kind_info<T>());
    T object;
    if (!decoder.decode(value, object)) {
        return make_error(ErrorCode::kInvalidArgument, decoder.error().describe());
    }
    return object;
}

template Result<Service> decode_one<Service>(const Value& value);
template Result<EndpointSlice> decode_one<EndpointSlice>(const Value& value);
template Result<Node> decode_one<Node>(const Value& value);
template Result<Pod> decode_one<Pod>(const Value& value);
template Result<ServiceCIDR> decode_one<ServiceCIDR>(const Value& value);

namespace {

template <typename T>
Result<AnyObject> decode_any(const Value& value) {
    auto result = decode_one<T>(value);
    if (!result) return result.error();
    return AnyObject(std::move(*result));
}

template <typename T>
std::optional<AnyObject> metadata_only(const Value& value) {
    T object;
    if (!Decoder(kind_info<T>()).decode_meta(value, object.meta)) return std::nullopt;
    if constexpr (std::is_same_v<T, EndpointSlice>) {
        auto label = object.meta.labels.find(kServiceNameLabel);
        if (label != object.meta.labels.end()) {
            object.service_name = label->second;
            object.meta.labels.erase(label);  // as the full decode does
        }
    }
    return AnyObject(std::move(object));
}

template <typename T, std::vector<T> Store::Objects::*objects>
void append_to(const Value& value, DecodedDocument& out) {
    Decoder decoder(kind_info<T>());
    auto& into = out.objects.*objects;
    into.emplace_back();
    if (!decoder.decode(value, into.back())) {
        into.pop_back();
        out.errors.push_back(decoder.take_error());
    }
}

template <typename T, std::vector<T> Store::Objects::*objects>
constexpr KindInfo row(std::string_view name, bool namespaced, NameRule name_rule,
                       bool keeps_labels = true) {
    return KindInfo{{name, namespaced, name_rule, keeps_labels},
                    &decode_any<T>,
                    &metadata_only<T>,
                    &append_to<T, objects>};
}

constexpr std::array<KindInfo, kKindCount> kKinds = {
    row<Service, &Store::Objects::services>("Service", true, NameRule::kDns1035Label),
    row<EndpointSlice, &Store::Objects::endpoint_slices>("EndpointSlice", true,
                                                         NameRule::kDnsSubdomain),
    row<Node, &Store::Objects::nodes>("Node", false, NameRule::kDnsSubdomain),
    row<Pod, &Store::Objects::pods>("Pod", true, NameRule::kDnsSubdomain, false),
    row<ServiceCIDR, &Store::Objects::service_cidrs>("ServiceCIDR", false, NameRule::kDnsSubdomain),
};

}  // namespace

const std::array<KindInfo, kKindCount>& kinds() {
    return kKinds;
}

const KindInfo* find_kind(std::string_view name) {
    for (const auto& kind : kKinds) {
        if (kind.name == name) return &kind;
    }
    return nullptr;
}

std::string kind_names() {
    std::string out;
    for (size_t i = 0; i < kKinds.size(); ++i) {
        if (i > 0) out += i + 1 == kKinds.size() ? " or " : ", ";
        out += kKinds[i].name;
    }
    return out;
}

}  // namespace sb::watch::decoding
