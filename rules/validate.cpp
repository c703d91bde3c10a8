#include "rules/validate.h"

#include <fmt/format.h>

namespace sb::rules {

Status validate_service(const ServicePortPlan& port) {
    auto fail = [&](const std::string& what) -> Status {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("service port {}: {}", port.id(), what));
    };
    if (port.port == 0) return fail("port is 0");
    if (port.cluster_ips.empty()) return fail("no clusterIPs");
    bool seen[2] = {false, false};
    for (const IpAddress& ip : port.cluster_ips) {
        const int index = ip.is_v4() ? 0 : 1;
        if (seen[index]) {
            return fail(fmt::format("two clusterIPs of family {}", ip.family()));
        }
        seen[index] = true;
        if (ip.is_unspecified()) return fail(fmt::format("clusterIP {} is unspecified", ip));
    }
    for (const auto* list : {&port.cluster_endpoints, &port.local_endpoints}) {
        for (const Endpoint& e : *list) {
            if (e.port == 0) return fail(fmt::format("endpoint {} has port 0", e.ip));
            if (e.ip.is_unspecified() || e.ip.is_multicast()) {
                return fail(fmt::format("endpoint address {} is not unicast", e.ip));
            }
        }
    }
    for (const auto* list : {&port.external_ips, &port.load_balancer_ips}) {
        for (const IpAddress& ip : *list) {
            if (ip.is_unspecified()) return fail(fmt::format("external address {}", ip));
        }
    }
    if (port.session_affinity.client_ip && port.session_affinity.timeout_seconds > 86400) {
        return fail("sessionAffinity timeoutSeconds above 86400");
    }
    if (!port.ipvs_scheduler.empty() && !is_ipvs_scheduler(port.ipvs_scheduler)) {
        return fail(fmt::format("ipvsScheduler \"{}\" is not an IPVS scheduler",
                                port.ipvs_scheduler.substr(0, 16)));
    }
    return {};
}

Status validate_interface_name(std::string_view name) {
    auto fail = [&](const std::string& what) -> Status {
        // Control characters shown as '?': the message stays one line.
        std::string shown(name.substr(0, 64));
        for (char& c : shown) {
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        }
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("interface name \"{}\" {}", shown, what));
    };
    if (name.empty()) return fail("is empty");
    if (name.size() > 15) return fail("is longer than 15 bytes");
    for (const char c : name) {
        const auto u = static_cast<unsigned char>(c);
        // The kernel refuses '/', ':' and whitespace in names; '"', '*' and
        // '+' would change the meaning of the nft and iptables text forms.
        if (u <= 0x20 || u == 0x7f || c == '/' || c == ':' || c == '"' || c == '*' || c == '+') {
            return fail(fmt::format("holds the character {:#04x}", u));
        }
    }
    return {};
}

Status validate_service_cidr(const Prefix& cidr) {
    static const Prefix kReserved[] = {
        *Prefix::parse("127.0.0.0/8"),
        *Prefix::parse("169.254.0.0/16"),
        *Prefix::parse("::1/128"),
        *Prefix::parse("fe80::/10"),
    };
    for (const Prefix& reserved : kReserved) {
        // Two prefixes overlap when the shorter holds the longer's network.
        const bool overlap = cidr.length() <= reserved.length() ? cidr.contains(reserved.address())
                                                                : reserved.contains(cidr.address());
        if (overlap) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("service CIDR {} overlaps the reserved range {}",
                                          cidr.to_string(), reserved.to_string()));
        }
    }
    return {};
}

Status validate_options(const BackendOptions& options) {
    if (options.masquerade_mark == 0) {
        return make_error(ErrorCode::kInvalidArgument, "masquerade mark must not be 0");
    }
    if (options.local_detect_mode == LocalDetectMode::kBridgeInterface ||
        options.local_detect_mode == LocalDetectMode::kInterfaceNamePrefix) {
        if (Status s = validate_interface_name(options.local_interface); !s) {
            return make_error(
                ErrorCode::kInvalidArgument,
                fmt::format("{}: {}",
                            options.local_detect_mode == LocalDetectMode::kBridgeInterface
                                ? "bridge interface"
                                : "interface name prefix",
                            s.error().message));
        }
    }
    return {};
}

}  // namespace sb::rules
