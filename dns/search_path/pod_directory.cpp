#include "dns/search_path/pod_directory.h"

#include <algorithm>
#include <chrono>
#include <map>

namespace sb::dns {

namespace {

bool has_default_search(const watch::Pod& pod) {
    bool cluster_first =
        pod.dns_policy == watch::DnsPolicy::kClusterFirst ||
        (pod.dns_policy == watch::DnsPolicy::kClusterFirstWithHostNet && !pod.host_network);
    // dnsConfig's options and nameservers leave the search list as it is.
    return cluster_first && (!pod.dns_config || pod.dns_config->searches.empty());
}

// ::ffff:a.b.c.d -> a.b.c.d; any other address as it is.
IpAddress unmapped(const IpAddress& address) {
    if (!address.is_v6()) return address;
    const uint8_t* b = address.bytes();
    static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!std::equal(kPrefix, kPrefix + 12, b)) return address;
    return IpAddress::from_bytes(IpFamily::kV4, b + 12);
}

}  // namespace

std::shared_ptr<const PodDirectory> PodDirectory::build(const std::vector<const watch::Pod*>& pods,
                                                        std::string_view node_name) {
    // Per address: the newest Pod holding it, and whether another Pod was
    // created at that same time.
    struct Holder {
        std::chrono::system_clock::time_point created;
        PodClient client;
        bool tied = false;
    };
    std::map<IpAddress, Holder> holders;
    if (!node_name.empty()) {
        for (const watch::Pod* pod : pods) {
            if (pod->node_name != node_name || pod->host_network) continue;
            if (pod->phase == watch::PodPhase::kSucceeded || pod->phase == watch::PodPhase::kFailed)
                continue;
            PodClient client{pod->meta.ns, has_default_search(*pod)};
            for (const IpAddress& raw : pod->pod_ips) {
                IpAddress address = unmapped(raw);
                auto [it, fresh] = holders.try_emplace(address, Holder{pod->created, client});
                if (fresh) continue;
                Holder& holder = it->second;
                if (pod->created > holder.created) {
                    holder = Holder{pod->created, client};
                } else if (pod->created == holder.created) {
                    holder.tied = true;
                }
            }
        }
    }
    auto directory = std::make_shared<PodDirectory>();
    directory->entries_.reserve(holders.size());
    for (auto& [address, holder] : holders) {
        if (holder.tied) {
            ++directory->ambiguous_;
            continue;
        }
        directory->entries_.emplace_back(address, std::move(holder.client));
    }
    return directory;
}

const PodClient* PodDirectory::find(const IpAddress& address) const {
    IpAddress key = unmapped(address);
    auto it =
        std::lower_bound(entries_.begin(), entries_.end(), key,
                         [](const auto& entry, const IpAddress& a) { return entry.first < a; });
    if (it == entries_.end() || !(it->first == key)) return nullptr;
    return &it->second;
}

}  // namespace sb::dns
