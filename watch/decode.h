// Decoding Kubernetes JSON (RapidJSON) into the object model.
//
// Every field switchboard uses is validated: IP syntax per family or
// addressType, ports 1-65535, names per RFC 1123 (length and charset), enum
// values. Unknown fields are ignored. An error names the object
// ("namespace/name", or "<unknown>" before the name is known) and the JSON
// path of the offending field ("spec.ports[1].port"). In a list, a bad
// object is skipped and reported; the rest of the document still loads.
// All functions are pure and thread-safe.
#pragma once

#include <rapidjson/document.h>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/result.h"
#include "watch/objects.h"
#include "watch/store.h"

namespace sb::watch {

struct DecodeError {
    std::string object;  // "namespace/name", "name" (Node) or "<unknown>"
    std::string kind;    // "Service", "EndpointSlice", "Node", "Pod" or "" when unknown
    std::string path;    // JSON path of the field, e.g. "spec.ports[0].port"
    std::string message;
    // "Service default/web: spec.ports[0].port: port 0 out of range 1-65535"
    std::string describe() const;
};

// In the order of watch::Kind.
using AnyObject = std::variant<Service, EndpointSlice, Node, Pod>;

// Single objects; `value` is the object itself (with or without "kind").
// On failure the Error's message is DecodeError::describe().
Result<Service> decode_service(const rapidjson::Value& value);
Result<EndpointSlice> decode_endpoint_slice(const rapidjson::Value& value);
Result<Node> decode_node(const rapidjson::Value& value);
Result<Pod> decode_pod(const rapidjson::Value& value);
// Dispatches on "kind" (Service, EndpointSlice, Node, Pod); other kinds are
// an error with path "kind".
Result<AnyObject> decode_object(const rapidjson::Value& value);

// A whole document: one object, or a List / ServiceList / EndpointSliceList /
// NodeList / PodList (as `kubectl get ... -o json` prints). Items of kinds
// switchboard does not use (ConfigMaps, Deployments...) are ignored silently. Fails only when
// the text is not JSON or not a Kubernetes object or list at all.
struct DecodedDocument {
    Store::Objects objects;
    std::vector<DecodeError> errors;  // the skipped objects
    std::string resource_version;     // metadata.resourceVersion of a list
    std::string continue_token;       // metadata.continue of a list page
};
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

// RFC 1123 label (<= 63, [a-z0-9-], alphanumeric at both ends) and subdomain
// (<= 253, dot-separated labels). Exposed for the DNS layer and the sources.
bool is_dns_label(std::string_view text);
bool is_dns_subdomain(std::string_view text);

}  // namespace sb::watch
