// The hashed part of the iptables backend's per-service and per-endpoint
// chain names, and the check that no two objects share one.
//
// x_tables limits a chain name to 28 characters, so a service port's chains
// (SVC, SVL, EXT, FW) carry 12 base32 characters (60 bits) of a hash of its
// id, and an endpoint's chain (SEP) a hash of the port's id and the endpoint.
// Two different objects with the same hash would share chains: one service
// would send its traffic to the other's endpoints. check_chain_names()
// keeps the first object of each hash (in plan order) and skips the later
// one with an error, never merging them. docs/iptables.md#chain-names.
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/plan.h"

namespace sb::rules::iptables {

// The hash of a chain name's hashed part; injectable so tests can force
// collisions that the real 60-bit hash makes too rare to find.
using ChainHash = std::function<std::string(std::string_view)>;
// 12 base32 characters of FNV-1a 64 (rules/naming.h): stable across runs.
std::string default_chain_hash(std::string_view text);

// What a service port's and an endpoint's chain names hash.
std::string service_hash_input(const ServicePortPlan& port);
std::string endpoint_hash_input(const ServicePortPlan& port, const Endpoint& endpoint);

struct ChainNameCheck {
    // The ports to render, in order: the given ones, or copies (owned by
    // `trimmed`) without their colliding endpoints.
    std::vector<const ServicePortPlan*> ports;
    std::deque<ServicePortPlan> trimmed;
    std::vector<std::string> errors;  // one per skipped port or endpoint
    size_t collisions = 0;            // skipped ports and endpoints
};

// Drops every service port whose hash an earlier port has, and every
// endpoint whose hash an earlier endpoint (of any port) has.
ChainNameCheck check_chain_names(const std::vector<const ServicePortPlan*>& ports,
                                 const ChainHash& hash);

}  // namespace sb::rules::iptables
