#include "rules/ipvs/model.h"

#include <netinet/in.h>

#include <fmt/format.h>

namespace sb::rules::ipvs {

namespace {

// ipvsadm's addrport_to_anyname() with FMT_NUMERIC.
std::string address_and_port(const IpAddress& address, uint16_t port) {
    if (address.is_v6()) return fmt::format("[{}]:{}", address.to_string(), port);
    return fmt::format("{}:{}", address.to_string(), port);
}

// ipvsadm's svc_name under FMT_RULE: every protocol that is neither TCP
// nor SCTP prints as -u, as ipvsadm does.
std::string service_option(const ServiceKey& key) {
    const char* flag = key.protocol == IPPROTO_TCP    ? "-t"
                       : key.protocol == IPPROTO_SCTP ? "--sctp-service"
                                                      : "-u";
    return fmt::format("{} {}", flag, address_and_port(key.address, key.port));
}

}  // namespace

const char* to_string(OpKind kind) {
    switch (kind) {
        case OpKind::kAddService:
            return "add service";
        case OpKind::kEditService:
            return "edit service";
        case OpKind::kDeleteService:
            return "delete service";
        case OpKind::kAddDestination:
            return "add destination";
        case OpKind::kEditDestination:
            return "edit destination";
        case OpKind::kDeleteDestination:
            return "delete destination";
    }
    return "unknown";
}

std::string describe(const Op& op) {
    std::string text =
        fmt::format("{} {} {}", to_string(op.kind), protocol_name(op.server.key.protocol),
                    HostPort{op.server.key.address, op.server.key.port});
    if (op.kind == OpKind::kAddDestination || op.kind == OpKind::kEditDestination ||
        op.kind == OpKind::kDeleteDestination) {
        text += fmt::format(" -> {}", HostPort{op.destination.address, op.destination.port});
    }
    return text;
}

const char* protocol_name(uint8_t protocol) {
    switch (protocol) {
        case IPPROTO_TCP:
            return "TCP";
        case IPPROTO_UDP:
            return "UDP";
        case IPPROTO_SCTP:
            return "SCTP";
        default:
            return "unknown";
    }
}

// ipvsadm's print_service_entry() and print_dest() under FMT_RULE. The
// netmask of a persistent service is the host's (VirtualServer), so the
// " -M" ipvsadm prints for any other never appears; neither do the
// persistence engine, one-packet scheduling, scheduler flags or thresholds,
// which switchboard never sets.
std::string to_ipvsadm_text(const IpvsState& state) {
    std::string out;
    for (const auto& [key, service] : state) {
        const std::string name = service_option(key);
        out += fmt::format("-A {} -s {}", name, service.server.scheduler);
        if (service.server.persistent) out += fmt::format(" -p {}", service.server.timeout_seconds);
        out += '\n';
        for (const RealServer& d : service.destinations) {
            out += fmt::format("-a {} -r {} -m -w {}\n", name, address_and_port(d.address, d.port),
                               d.weight);
        }
    }
    return out;
}

}  // namespace sb::rules::ipvs
