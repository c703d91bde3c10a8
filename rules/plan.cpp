#include "rules/plan.h"

#include <netinet/in.h>

#include <atomic>

namespace sb::rules {

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
