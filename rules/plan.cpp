#include "rules/plan.h"

#include <netinet/in.h>

#include <atomic>

namespace sb::rules {

const char* to_string(Protocol protocol) {
    switch (protocol) {
        case Protocol::kTCP:
            return "TCP";
        case Protocol::kUDP:
            return "UDP";
        case Protocol::kSCTP:
            return "SCTP";
    }
    return "TCP";
}

uint8_t ip_protocol_number(Protocol protocol) {
    switch (protocol) {
        case Protocol::kTCP:
            return IPPROTO_TCP;
        case Protocol::kUDP:
            return IPPROTO_UDP;
        case Protocol::kSCTP:
            return IPPROTO_SCTP;
    }
    return IPPROTO_TCP;
}

const char* to_string(TrafficPolicy policy) {
    return policy == TrafficPolicy::kLocal ? "Local" : "Cluster";
}

bool is_ipvs_scheduler(std::string_view name) {
    for (const char* known : kIpvsSchedulers) {
        if (name == known) return true;
    }
    return false;
}

std::string ServicePortPlan::id() const {
    return ns + "/" + service + ":" + port_name + "/" + to_string(protocol);
}

uint64_t next_plan_revision() {
    static std::atomic<uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace sb::rules
