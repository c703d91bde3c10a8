// Decoding Kubernetes JSON (RapidJSON) into the object model.
//
// Every field switchboard uses is validated: IP syntax per family or
// addressType, ports 1-65535, names per RFC 1123 (length and charset), enum
// values. Unknown fields are ignored. An error names the object
// ("namespace/name", or "<unknown>" before the name is known) and the JSON
// path of the offending field ("spec.ports[1].port"). In a list, a bad
// object is skipped and reported; the rest of the document still loads.
// All functions are pure and thread-safe.
//
// The types they return are in watch/decoded.h; the code is in watch/decode/
// (whose README says which file does what). This header stays at the root,
// beside the model, so that the root's file source can use it without a
// loop between watch/ and watch/decode/.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>

#include "base/result.h"
#include "watch/decoded.h"

namespace sb::watch {

// Single objects; `value` is the object itself (with or without "kind").
// On failure the Error's message is DecodeError::describe().
Result<Service> decode_service(const rapidjson::Value& value);
Result<EndpointSlice> decode_endpoint_slice(const rapidjson::Value& value);
Result<Node> decode_node(const rapidjson::Value& value);
Result<Pod> decode_pod(const rapidjson::Value& value);
Result<ServiceCIDR> decode_service_cidr(const rapidjson::Value& value);
// Dispatches on "kind" (Service, EndpointSlice, Node, Pod, ServiceCIDR); other kinds are
// an error with path "kind".
Result<AnyObject> decode_object(const rapidjson::Value& value);

// A whole document: one object or a List (DecodedDocument). Fails only when
// the text is not JSON or not a Kubernetes object or list at all.
Result<DecodedDocument> decode_document(std::string_view json);

// One line of a watch stream: {"type": ..., "object": ...}.
struct WatchEvent {
    enum class Type { kAdded, kModified, kDeleted, kBookmark, kError };
    Type type = Type::kAdded;
    // kAdded/kModified/kDeleted: the decoded object.
    AnyObject object;
    // The object's metadata.resourceVersion (for every type but kError).
    std::string resource_version;
    // kAdded/kModified whose object failed validation: why (the
    // DecodeError's describe()), and `object` holds only its metadata (its
    // key). A relist skips such an object, so the watch must drop it too
    // (watch/kube/apply_event.h). Empty for a valid object.
    std::string rejected;
    // kError: the Status object's code (410 for Gone) and message.
    int status_code = 0;
    std::string status_message;
};
// An ADDED or MODIFIED object that fails validation is not an error: the
// event comes back with `rejected` set, as long as the object's kind and
// name can be read. A DELETED one yields its key (a deletion is never lost).
Result<WatchEvent> decode_watch_event(std::string_view line);

}  // namespace sb::watch
