#include "watch/objects.h"

#include "base/timestamp.h"

namespace sb::watch {

bool left_to_another_proxy(const ObjectMeta& meta) {
    return meta.labels.count(kServiceProxyNameLabel) > 0 || meta.labels.count(kHeadlessLabel) > 0;
}

bool proxied_by_default_proxy(const Service& service) {
    if (service.headless || service.cluster_ips.empty()) return false;
    if (service.type == ServiceType::kExternalName) return false;
    return !left_to_another_proxy(service.meta);
}

const char* to_string(DnsPolicy policy) {
    switch (policy) {
        case DnsPolicy::kClusterFirst:
            return "ClusterFirst";
        case DnsPolicy::kClusterFirstWithHostNet:
            return "ClusterFirstWithHostNet";
        case DnsPolicy::kDefault:
            return "Default";
        case DnsPolicy::kNone:
            return "None";
    }
    return "ClusterFirst";
}

const char* to_string(ServiceType type) {
    switch (type) {
        case ServiceType::kClusterIP:
            return "ClusterIP";
        case ServiceType::kNodePort:
            return "NodePort";
        case ServiceType::kLoadBalancer:
            return "LoadBalancer";
        case ServiceType::kExternalName:
            return "ExternalName";
    }
    return "ClusterIP";
}

const char* to_string(TrafficPolicy policy) {
    return policy == TrafficPolicy::kLocal ? "Local" : "Cluster";
}

const char* to_string(AddressType type) {
    switch (type) {
        case AddressType::kIPv4:
            return "IPv4";
        case AddressType::kIPv6:
            return "IPv6";
        case AddressType::kFQDN:
            return "FQDN";
    }
    return "IPv4";
}

std::optional<std::chrono::system_clock::time_point> last_change_trigger_time(
    const EndpointSlice& slice) {
    auto it = slice.meta.annotations.find(kLastChangeTriggerTimeAnnotation);
    if (it == slice.meta.annotations.end()) return std::nullopt;
    return parse_rfc3339(it->second);
}

}  // namespace sb::watch
