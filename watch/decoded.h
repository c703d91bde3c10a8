// What decoding yields (watch/decode.h): the error that names a bad object,
// the variant of the decoded kinds, and a decoded document. Below both the
// public decoding API and its private modules in watch/decode/, which share
// these types without including the API. Plain values; thread-safe as values.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "watch/objects.h"
#include "watch/store.h"

namespace sb::watch {

struct DecodeError {
    std::string object;  // "namespace/name", "name" (Node) or "<unknown>"
    std::string kind;    // "Service", "EndpointSlice", "Node", "Pod", "ServiceCIDR" or ""
    std::string path;    // JSON path of the field, e.g. "spec.ports[0].port"
    std::string message;
    // "Service default/web: spec.ports[0].port: port 0 out of range 1-65535"
    std::string describe() const;
};

// In the order of watch::Kind.
using AnyObject = std::variant<Service, EndpointSlice, Node, Pod, ServiceCIDR>;

// A whole document: one object, or a List / ServiceList / EndpointSliceList /
// NodeList / PodList / ServiceCIDRList (as `kubectl get ... -o json` prints). Items of kinds
// switchboard does not use (ConfigMaps, Deployments...) are ignored silently.
struct DecodedDocument {
    Store::Objects objects;
    std::vector<DecodeError> errors;  // the skipped objects
    std::string resource_version;     // metadata.resourceVersion of a list
    std::string continue_token;       // metadata.continue of a list page
};

}  // namespace sb::watch
