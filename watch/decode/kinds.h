// The kinds switchboard decodes, in one table (private to watch/decode/):
// everything that differs between the kinds (Service, EndpointSlice, Node, Pod,
// ServiceCIDR) for the
// code that dispatches on a kind (decode_object, the items of documents and
// lists, watch events) and for the Decoder's metadata rules. A new kind is
// one row here, one alternative of AnyObject and one Decoder::decode.
// Immutable; thread-safe. Above the Decoder (its rows run it), below the
// public API (watch/decode.h, implemented in decode.cpp).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "base/result.h"
#include "watch/decode/decoder.h"
#include "watch/decode/json.h"
#include "watch/decoded.h"

namespace sb::watch::decoding {

// A kind's rules (what the Decoder reads) and its functions.
struct KindInfo : KindRules {
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

// The row of the object type T (Service, EndpointSlice, Node, Pod, ServiceCIDR).
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

// The object of type T, or the DecodeError's describe() as the Error. Defined
// in kinds.cpp for the alternatives of AnyObject (Service, EndpointSlice,
// Node, Pod, ServiceCIDR) only.
template <typename T>
Result<T> decode_one(const Value& value);

}  // namespace sb::watch::decoding
