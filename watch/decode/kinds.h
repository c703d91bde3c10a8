// The kinds switchboard decodes, in one table (private to watch/decode*):
// everything that differs between Service, EndpointSlice, Node and Pod for the
// code that dispatches on a kind (decode_object, the items of documents and
// lists, watch events) and for the Decoder's metadata rules. A new kind is
// one row here, one alternative of AnyObject and one Decoder::decode.
// Immutable; thread-safe.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "base/result.h"
#include "watch/decode.h"
#include "watch/decode/json.h"

namespace sb::watch::decoding {

// What metadata.name must be.
enum class NameRule {
    kDns1035Label,  // Service
    kDnsSubdomain,  // EndpointSlice, Node
};

struct KindInfo {
    std::string_view name;  // the JSON "kind"
    bool namespaced;        // metadata.namespace is read (and defaults to "default")
    NameRule name_rule;
    // metadata.labels and .annotations are read (and validated) and kept.
    // Pods' are not: nothing reads them, and a node holds up to hundreds of
    // Pods whose labels would cost more than the rest of the Pod.
    bool keeps_labels;
    // The whole object, or the DecodeError's describe() as the Error.
    Result<AnyObject> (*decode)(const Value& value);
    // Only the object's key and labels (what a deletion needs); nullopt when
    // even the metadata is invalid.
    std::optional<AnyObject> (*metadata_only)(const Value& value);
    // Decodes the object into its vector of `out.objects`, or records its
    // error in `out.errors`.
    void (*append_to)(const Value& value, DecodedDocument& out);
};

// One row per alternative of AnyObject, in its order (which is also the
// order of watch::Kind).
inline constexpr size_t kKindCount = std::variant_size_v<AnyObject>;
const std::array<KindInfo, kKindCount>& kinds();

// The row named `name`; nullptr for a kind switchboard does not decode.
const KindInfo* find_kind(std::string_view name);

// The row of the object type T (Service, EndpointSlice, Node, Pod).
template <typename T, size_t I = 0>
const KindInfo& kind_info() {
    if constexpr (std::is_same_v<T, std::variant_alternative_t<I, AnyObject>>) {
        return kinds()[I];
    } else {
        return kind_info<T, I + 1>();
    }
}

// "Service, EndpointSlice, Node or Pod", for messages.
std::string kind_names();

}  // namespace sb::watch::decoding
