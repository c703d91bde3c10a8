// The Plan: the contract between the daemon and the kernel backends.
//
// A Plan lists, for every service port this node proxies, the addresses and
// ports that lead to it, its policies, and the endpoints to use for cluster
// traffic and for node-local traffic. It is plain data computed by the
// planner (proxy/planner.h) from Kubernetes objects; backends read nothing
// else, so they can be tested with hand-made Plans. Every value in a Plan is
// already validated (addresses parsed, ports in range).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/iterator/indirect_iterator.hpp>

#include "base/ip.h"
#include "base/symbol.h"

namespace sb::rules {

enum class Protocol : uint8_t { kTCP, kUDP, kSCTP };
const char* to_string(Protocol protocol);       // "TCP", "UDP", "SCTP"
uint8_t ip_protocol_number(Protocol protocol);  // IPPROTO_TCP, ...

enum class TrafficPolicy : uint8_t { kCluster, kLocal };
const char* to_string(TrafficPolicy policy);  // "Cluster", "Local"

struct Endpoint {
    IpAddress ip;
    uint16_t port = 0;
    bool ready = false;
    bool serving = false;
    bool terminating = false;
    // Interned: a cluster has few distinct node and zone names, and every
    // endpoint names one of each (the backends read neither; the plan's
    // JSON prints them).
    Symbol node_name;
    Symbol zone;
    bool is_local = false;  // node_name is this node

    auto operator<=>(const Endpoint&) const = default;
};

struct SessionAffinity {
    bool client_ip = false;
    uint32_t timeout_seconds = 0;  // meaningful when client_ip
    bool operator==(const SessionAffinity&) const = default;
};

struct ServicePortPlan {
    std::string ns;
    std::string service;
    std::string port_name;
    Protocol protocol = Protocol::kTCP;
    std::vector<IpAddress> cluster_ips;
    uint16_t port = 0;
    uint16_t node_port = 0;  // 0: none
    std::vector<IpAddress> external_ips;
    std::vector<IpAddress> load_balancer_ips;
    std::vector<Prefix> load_balancer_source_ranges;
    TrafficPolicy external_traffic_policy = TrafficPolicy::kCluster;
    TrafficPolicy internal_traffic_policy = TrafficPolicy::kCluster;
    uint16_t health_check_node_port = 0;
    SessionAffinity session_affinity;
    // Endpoints for traffic under the Cluster policy: ready ones (topology
    // filtered), else serving+terminating ones, else none. Sorted by ip, port.
    std::vector<Endpoint> cluster_endpoints;
    // The same rule over the endpoints on this node. Sorted by ip, port.
    std::vector<Endpoint> local_endpoints;

    // "ns/service:portName/protocol": a stable, unique identity in a Plan.
    std::string id() const;
    bool operator==(const ServicePortPlan&) const = default;
};

// The service ports of a Plan: a sequence of shared, immutable entries.
// Copying it copies pointers, so a partial replan that keeps most entries
// costs what changed (docs/planner.md, "Shared entries"). Reading behaves as
// a std::vector<ServicePortPlan>. Writing through operator[], front() or
// back() of a non-const object first detaches that one entry when another
// ServicePorts shares it (copy on write), so a Plan never changes under
// another Plan. A reference so obtained stays valid until the next call
// that adds, removes or reorders entries. Not thread-safe for writes; const
// access from any thread, as long as nobody writes.
class ServicePorts {
  public:
    using Entry = std::shared_ptr<const ServicePortPlan>;
    using value_type = ServicePortPlan;
    using const_iterator = boost::indirect_iterator<std::vector<Entry>::const_iterator>;
    using iterator = const_iterator;

    ServicePorts() = default;
    ServicePorts(std::vector<ServicePortPlan> ports);  // NOLINT: a vector converts
    ServicePorts(std::initializer_list<ServicePortPlan> ports)
        : ServicePorts(std::vector<ServicePortPlan>(ports)) {}

    size_t size() const { return entries_.size(); }
    bool empty() const { return entries_.empty(); }
    const_iterator begin() const { return const_iterator(entries_.begin()); }
    const_iterator end() const { return const_iterator(entries_.end()); }
    const ServicePortPlan& operator[](size_t i) const { return *entries_[i]; }
    const ServicePortPlan& at(size_t i) const { return *entries_.at(i); }
    const ServicePortPlan& front() const { return *entries_.front(); }
    const ServicePortPlan& back() const { return *entries_.back(); }
    ServicePortPlan& operator[](size_t i) { return detach(i); }
    ServicePortPlan& front() { return detach(0); }
    ServicePortPlan& back() { return detach(entries_.size() - 1); }
    // The shared entry itself, for a plan built from another one.
    const Entry& entry(size_t i) const { return entries_[i]; }

    void reserve(size_t n) { entries_.reserve(n); }
    void clear() { entries_.clear(); }
    void push_back(ServicePortPlan port);
    // Precondition: `entry` is not null and comes from entry() of a
    // ServicePorts (whose entries are writable objects, see detach()).
    void push_back(Entry entry);
    void pop_back() { entries_.pop_back(); }
    const_iterator erase(const_iterator position);
    // Orders the entries by `less` over their values.
    template <typename Less>
    void sort(Less less) {
        std::sort(entries_.begin(), entries_.end(),
                  [&](const Entry& a, const Entry& b) { return less(*a, *b); });
    }

    // By value; an entry shared by both sides is equal without a look.
    bool operator==(const ServicePorts& other) const;

  private:
    ServicePortPlan& detach(size_t i);
    std::vector<Entry> entries_;
};

// Which Services (namespace, name) may differ between a Plan and the plan
// it was derived from; the Services not listed have the very same entries.
// It travels with the Plan so that a backend comparing the two can look at
// these Services only (rules/port_changes.h).
struct PlanChanges {
    uint64_t base_revision = 0;  // the revision of the plan this one was derived from
    std::vector<std::pair<std::string, std::string>> services;  // sorted, unique
};

struct Plan {
    std::string node;
    // Sorted by namespace, service, port name, protocol.
    ServicePorts services;
    // Distinct for every plan the planner makes (next_plan_revision()); 0 for
    // a plan made by hand, which no change set can name as its base.
    uint64_t revision = 0;
    // Set when the plan was derived from the plan of `base_revision` by
    // replanning some Services; absent for a plan built whole.
    std::optional<PlanChanges> changes;

    // The node and the service ports: revision and changes describe how the
    // plan was made, not what it says.
    bool operator==(const Plan& other) const {
        return node == other.node && services == other.services;
    }
};

// A process-wide increasing counter, starting at 1. Thread-safe.
uint64_t next_plan_revision();

}  // namespace sb::rules
