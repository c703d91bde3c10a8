// The Kubernetes object model switchboard uses: plain, copyable value types
// holding only the fields the proxy and DNS read, already validated by the
// decoder (watch/decode.h). Absent optional API fields are resolved to their
// API meaning at decode time (e.g. an absent `ready` condition means ready),
// so consumers never re-interpret nil.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/protocol.h"
#include "base/symbol.h"
#include "watch/address_list.h"
#include "watch/rare_string.h"
#include "watch/target_ref.h"

namespace sb::watch {

// namespace/name; namespace is empty for cluster-scoped objects (Node).
struct ObjectKey {
    std::string ns;
    std::string name;
    std::string to_string() const { return ns.empty() ? name : ns + "/" + name; }
    auto operator<=>(const ObjectKey&) const = default;
};

// metadata.uid is validated and not kept: nothing reads it (36 characters,
// a heap block besides the string, per object).
struct ObjectMeta {
    std::string ns;
    std::string name;
    std::string resource_version;
    std::map<std::string, std::string> labels;
    std::map<std::string, std::string> annotations;

    ObjectKey key() const { return {ns, name}; }
    bool operator==(const ObjectMeta&) const = default;
};

// base's Protocol (base/protocol.h): the API's and the Plan's are one type.
using sb::Protocol;
using sb::to_string;

// targetPort: a number or the name of a container port.
struct IntOrString {
    bool is_string = false;
    int32_t number = 0;
    std::string name;
    bool operator==(const IntOrString&) const = default;
};

struct ServicePort {
    std::string name;  // may be empty when the Service has one port
    Protocol protocol = Protocol::kTCP;
    uint16_t port = 0;
    IntOrString target_port;  // defaults to `port` when absent
    uint16_t node_port = 0;   // 0: none
    bool operator==(const ServicePort&) const = default;
};

enum class ServiceType : uint8_t { kClusterIP, kNodePort, kLoadBalancer, kExternalName };
const char* to_string(ServiceType type);

enum class TrafficPolicy : uint8_t { kCluster, kLocal };
const char* to_string(TrafficPolicy policy);  // "Cluster" / "Local"

enum class SessionAffinity : uint8_t { kNone, kClientIP };

struct LoadBalancerIngress {
    std::optional<IpAddress> ip;
    std::string hostname;
    // status.loadBalancer.ingress[].ipMode == "Proxy": the load balancer
    // does not deliver packets with the LB IP as destination, so (as in
    // kube-proxy) the node must not short-circuit it.
    bool ip_mode_proxy = false;
    bool operator==(const LoadBalancerIngress&) const = default;
};

// Kubernetes' default for sessionAffinityConfig.clientIP.timeoutSeconds.
inline constexpr int32_t kDefaultAffinityTimeoutSeconds = 10800;

struct Service {
    ObjectMeta meta;
    ServiceType type = ServiceType::kClusterIP;
    // spec.clusterIP == "None".
    bool headless = false;
    // spec.clusterIPs (or spec.clusterIP when clusterIPs is absent); empty
    // for headless and ExternalName Services and unallocated ones.
    std::vector<IpAddress> cluster_ips;
    std::vector<IpFamily> ip_families;
    std::vector<ServicePort> ports;
    // spec.selector is set and not empty. Its terms are validated and not
    // kept: nothing reads them (50k Services kept 7 MB of one-term maps).
    bool has_selector = false;
    std::vector<IpAddress> external_ips;
    RareString external_name;  // ExternalName only; a validated DNS name
    TrafficPolicy external_traffic_policy = TrafficPolicy::kCluster;
    TrafficPolicy internal_traffic_policy = TrafficPolicy::kCluster;
    uint16_t health_check_node_port = 0;
    SessionAffinity session_affinity = SessionAffinity::kNone;
    int32_t affinity_timeout_seconds = kDefaultAffinityTimeoutSeconds;
    std::vector<Prefix> load_balancer_source_ranges;
    bool publish_not_ready_addresses = false;
    RareString traffic_distribution;  // "" when unset, e.g. "PreferClose"
    std::vector<LoadBalancerIngress> load_balancer_ingress;

    bool operator==(const Service&) const = default;
};

// Labels that take a Service (and its EndpointSlices) away from the default
// proxy, as in kube-proxy (any value of the label counts).
inline constexpr const char* kServiceProxyNameLabel = "service.kubernetes.io/service-proxy-name";
inline constexpr const char* kHeadlessLabel = "service.kubernetes.io/headless";

// Whether `meta` carries one of the labels above.
bool left_to_another_proxy(const ObjectMeta& meta);

// Whether the default proxy (kube-proxy, switchboard) programs rules for the
// Service: kube-proxy's ShouldSkipService plus the label selector its
// informers use. The planner plans exactly these; the DNS zone holds their
// names back until the rules are in (docs/dns.md, "Publish after programming").
bool proxied_by_default_proxy(const Service& service);

enum class AddressType : uint8_t { kIPv4, kIPv6, kFQDN };
const char* to_string(AddressType type);

// hints.forZones / hints.forNodes of an endpoint (topology-aware routing).
struct EndpointHints {
    std::vector<std::string> for_zones;
    std::vector<std::string> for_nodes;
    bool operator==(const EndpointHints&) const = default;
};

// Endpoints are the bulk of a large cluster's memory (100k of them for 10k
// Services), so repeated vocabularies are Symbols, the one address sits
// inline, the usually absent hostname and hints cost a pointer each, and
// the targetRef (every Pod endpoint has one) is one block: 88 B and no heap
// block for an endpoint without one (docs/store.md).
struct Endpoint {
    // Parsed addresses of the slice's family (empty for addressType FQDN,
    // whose names are validated and dropped: nothing proxies or publishes
    // them). kube-proxy uses the first; DNS publishes each.
    AddressList addresses;
    // Resolved conditions: absent ready/serving mean true, absent
    // terminating means false (discovery.k8s.io/v1 semantics).
    bool ready = true;
    bool serving = true;
    bool terminating = false;
    RareString hostname;
    Symbol node_name;
    Symbol zone;
    // nullptr when the endpoint has no hints. Shared and immutable.
    std::shared_ptr<const EndpointHints> hints;
    TargetRef target_ref;

    bool operator==(const Endpoint& other) const {
        const bool same_hints =
            hints == other.hints || (hints && other.hints && *hints == *other.hints);
        return same_hints && addresses == other.addresses && ready == other.ready &&
               serving == other.serving && terminating == other.terminating &&
               hostname == other.hostname && node_name == other.node_name && zone == other.zone &&
               target_ref == other.target_ref;
    }
};

struct EndpointPort {
    std::string name;
    Protocol protocol = Protocol::kTCP;
    // nullopt: the API's "all ports" (nil); such a port is not proxied.
    std::optional<uint16_t> port;
    bool operator==(const EndpointPort&) const = default;
};

inline constexpr const char* kServiceNameLabel = "kubernetes.io/service-name";

struct EndpointSlice {
    ObjectMeta meta;
    // The label kubernetes.io/service-name, which the decoder takes out of
    // meta.labels; empty when absent (the slice is then not associated with
    // any Service).
    std::string service_name;
    AddressType address_type = AddressType::kIPv4;
    std::vector<Endpoint> endpoints;
    std::vector<EndpointPort> ports;
    bool operator==(const EndpointSlice&) const = default;
};

// The annotation the EndpointSlice controller stamps with the time of the
// change that triggered the slice's update (RFC 3339): where kube-proxy's
// network and CoreDNS's DNS programming latencies start.
inline constexpr const char* kLastChangeTriggerTimeAnnotation =
    "endpoints.kubernetes.io/last-change-trigger-time";

// The last-change-trigger-time annotation of `slice`; nullopt when absent or
// not RFC 3339 (kube-proxy and CoreDNS ignore such values too).
std::optional<std::chrono::system_clock::time_point> last_change_trigger_time(
    const EndpointSlice& slice);

struct NodeAddress {
    std::string type;  // InternalIP, ExternalIP, Hostname, ...
    std::string address;
    bool operator==(const NodeAddress&) const = default;
};

inline constexpr const char* kZoneLabel = "topology.kubernetes.io/zone";

struct Taint {
    std::string key;
    std::string value;
    std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
    bool operator==(const Taint&) const = default;
};

// kube-proxy's node-eligibility taint (the cluster autoscaler's).
inline constexpr const char* kToBeDeletedTaint = "ToBeDeletedByClusterAutoscaler";

struct Node {
    ObjectMeta meta;
    std::vector<NodeAddress> addresses;
    // metadata.deletionTimestamp is set: the Node is being deleted.
    bool being_deleted = false;
    std::vector<Taint> taints;      // spec.taints
    std::vector<Prefix> pod_cidrs;  // spec.podCIDRs (else [spec.podCIDR])
    std::string zone() const {
        auto it = meta.labels.find(kZoneLabel);
        return it == meta.labels.end() ? std::string() : it->second;
    }
    bool operator==(const Node&) const = default;
};

// spec.dnsPolicy. An absent policy is ClusterFirst (the API default).
enum class DnsPolicy : uint8_t { kClusterFirst, kClusterFirstWithHostNet, kDefault, kNone };
const char* to_string(DnsPolicy policy);  // "ClusterFirst", ...

// spec.dnsConfig.options[]: a resolver option, `value` absent for a flag
// such as `rotate`.
struct PodDnsOption {
    std::string name;
    std::optional<std::string> value;
    bool operator==(const PodDnsOption&) const = default;
};

// spec.dnsConfig.
struct PodDnsConfig {
    std::vector<std::string> nameservers;
    std::vector<std::string> searches;
    std::vector<PodDnsOption> options;
    bool operator==(const PodDnsConfig&) const = default;
};

// status.phase: a Pod in a terminal phase has released its addresses,
// which a new Pod may already have (its status.podIPs stay as they were).
enum class PodPhase : uint8_t { kPending, kRunning, kSucceeded, kFailed, kUnknown };

// The fields of a Pod that name its DNS client: whom a query from its
// address comes from, and which search path its resolver walks (issue 13).
struct Pod {
    ObjectMeta meta;
    std::string node_name;  // spec.nodeName
    bool host_network = false;
    DnsPolicy dns_policy = DnsPolicy::kClusterFirst;
    std::optional<PodDnsConfig> dns_config;  // absent: no spec.dnsConfig
    std::vector<IpAddress> pod_ips;          // status.podIPs (else [status.podIP])
    PodPhase phase = PodPhase::kPending;
    // metadata.creationTimestamp: of two Pods with one address, the newer
    // holds it.
    std::chrono::system_clock::time_point created{};
    bool operator==(const Pod&) const = default;
};

// A ServiceCIDR (networking.k8s.io/v1, cluster-scoped): a range the API
// server allocates ClusterIPs from. kube-proxy's nftables mode drops new
// connections to an address of such a range that no Service holds
// (docs/nftables.md, "Unallocated ClusterIPs").
struct ServiceCIDR {
    ObjectMeta meta;
    // spec.cidrs: one or two prefixes, at most one per family, host bits
    // zero (as the API server validates them).
    std::vector<Prefix> cidrs;
    bool operator==(const ServiceCIDR&) const = default;
};

}  // namespace sb::watch
