#include "dns/zone/programmed.h"

#include <algorithm>

namespace sb::dns {

bool ProgrammedService::has_port(const watch::ServicePort& port) const {
    return std::binary_search(ports.begin(), ports.end(),
                              ProgrammedPort{port.name, port.protocol, port.port});
}

bool ProgrammedService::has_cluster_ip(const IpAddress& address) const {
    return std::binary_search(cluster_ips.begin(), cluster_ips.end(), address);
}

ProgrammedServicePtr ProgrammedServices::find(const watch::ObjectKey& key) const {
    auto it = services_.find(key);
    return it == services_.end() ? nullptr : it->second;
}

std::vector<watch::ObjectKey> ProgrammedServices::apply(const ProgrammedChanges& changes) {
    reported_ = true;
    std::vector<watch::ObjectKey> changed;
    for (const auto& [key, state] : changes) {
        auto it = services_.find(key);
        const ProgrammedServicePtr before = it == services_.end() ? nullptr : it->second;
        const bool same = before && state ? *before == *state : before == state;
        if (same) continue;
        changed.push_back(key);
        if (!state) {
            services_.erase(it);
        } else if (it == services_.end()) {
            services_.emplace(key, state);
        } else {
            it->second = state;
        }
    }
    return changed;
}

}  // namespace sb::dns
