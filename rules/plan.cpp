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

std::string ServicePortPlan::id() const {
    return ns + "/" + service + ":" + port_name + "/" + to_string(protocol);
}

ServicePorts::ServicePorts(std::vector<ServicePortPlan> ports) {
    entries_.reserve(ports.size());
    for (auto& port : ports) push_back(std::move(port));
}

void ServicePorts::push_back(ServicePortPlan port) {
    entries_.push_back(std::make_shared<ServicePortPlan>(std::move(port)));
}

void ServicePorts::push_back(Entry entry) {
    entries_.push_back(std::move(entry));
}

ServicePorts::const_iterator ServicePorts::erase(const_iterator position) {
    return const_iterator(entries_.erase(position.base()));
}

ServicePortPlan& ServicePorts::detach(size_t i) {
    // Entries are made non-const (push_back above), so an entry no other
    // Plan holds may be written in place; a shared one is copied first, so
    // that no other Plan sees the write.
    if (entries_[i].use_count() == 1) return const_cast<ServicePortPlan&>(*entries_[i]);
    auto copy = std::make_shared<ServicePortPlan>(*entries_[i]);
    ServicePortPlan& writable = *copy;
    entries_[i] = std::move(copy);
    return writable;
}

bool ServicePorts::operator==(const ServicePorts& other) const {
    if (entries_.size() != other.entries_.size()) return false;
    for (size_t i = 0; i < entries_.size(); ++i) {
        if (entries_[i] != other.entries_[i] && !(*entries_[i] == *other.entries_[i])) return false;
    }
    return true;
}

uint64_t next_plan_revision() {
    static std::atomic<uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace sb::rules
