#include "dns/zone/programming_latency.h"

namespace sb::dns {

ProgrammingLatency::ProgrammingLatency(time_point started)
    : started_(started),
      duration_(metrics::Family{"coredns_kubernetes_dns_programming_duration_seconds",
                                "Histogram of the time (in seconds) it took to program a dns "
                                "instance.",
                                metrics::Type::kHistogram,
                                {"service_kind"}},
                metrics::exponential_buckets(0.001, 2, 20)) {}

void ProgrammingLatency::record(const std::vector<watch::Change>& changes) {
    std::lock_guard lock(mutex_);
    for (const auto& change : changes) {
        // A slice whose label moved comes twice (old and new Service): the
        // last one is the Service it belongs to now.
        if (change.kind == watch::Kind::kEndpointSlice) changed_[change.key] = change.service;
    }
}

ProgrammingLatency::Changed ProgrammingLatency::take() {
    std::lock_guard lock(mutex_);
    return std::exchange(changed_, {});
}

const char* ProgrammingLatency::service_kind(const watch::Service& service) {
    if (!service.headless) return "cluster_ip";
    return service.has_selector ? "headless_with_selector" : "headless_without_selector";
}

void ProgrammingLatency::observe(const Changed& changed, const watch::Snapshot& snapshot,
                                 time_point now) {
    for (const auto& [slice_key, service_key] : changed) {
        const auto* slice = snapshot.endpoint_slices().find(slice_key);
        if (!slice) continue;  // deleted: nothing to time
        const watch::Service* service = snapshot.find_service(service_key);
        if (!service || service->type == watch::ServiceType::kExternalName) continue;
        auto triggered = watch::last_change_trigger_time(**slice);
        if (!triggered || *triggered < started_) continue;
        duration_.with({service_kind(*service)})
            .observe(std::chrono::duration<double>(now - *triggered).count());
    }
}

void ProgrammingLatency::append_metrics(metrics::TextWriter& out) const {
    duration_.write(out);
}

}  // namespace sb::dns
