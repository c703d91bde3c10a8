#include "dns/search_path/autopath.h"

#include <algorithm>

#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

// `<ns>.svc.` in wire form, to put in front of a zone.
std::string namespace_service_prefix(std::string_view ns) {
    std::string prefix;
    prefix.push_back(static_cast<char>(ns.size()));
    prefix.append(ns);
    prefix.append("\3svc");
    return prefix;
}

// The text length of a wire name (no trailing dot): what kubelet counts.
size_t text_length(const std::string& wire) {
    return wire.size() <= 1 ? 0 : wire.size() - 2;
}

// Kubelet's list for a ClusterFirst Pod (formDNSSearchFitsLimits), in wire form.
std::vector<std::string> pod_search_list(std::string_view ns, std::string_view zone,
                                         const std::vector<std::string>& node_searches) {
    std::vector<std::string> composed;
    composed.reserve(3 + node_searches.size());
    composed.push_back(namespace_service_prefix(ns) + std::string(zone));
    composed.push_back("\3svc" + std::string(zone));
    composed.emplace_back(zone);
    for (const auto& search : node_searches) {
        if (std::find(composed.begin(), composed.end(), search) == composed.end())
            composed.push_back(search);
    }
    fit_search_limits(composed, [](const std::string& search) { return text_length(search); });
    return composed;
}

}  // namespace

bool is_first_expansion(std::string_view lower_name, std::string_view ns, std::string_view zone) {
    // The suffix is `<ns>.svc.<zone>`: its length is known without building it.
    const size_t suffix = 1 + ns.size() + 4 + zone.size();
    if (ns.empty() || ns.size() > 63 || lower_name.size() <= suffix) return false;
    if (!name_is_under(lower_name, lower_name.substr(lower_name.size() - suffix))) return false;
    std::string_view tail = lower_name.substr(lower_name.size() - suffix);
    return tail.substr(1 + ns.size() + 4) == zone &&
           tail.substr(0, 1 + ns.size() + 4) == namespace_service_prefix(ns);
}

std::optional<std::vector<SearchStep>> search_steps(std::string_view name, std::string_view ns,
                                                    std::string_view zone,
                                                    const std::vector<std::string>& node_searches) {
    const std::string lower = name_lower(name);
    if (!is_first_expansion(lower, ns, zone)) return std::nullopt;
    // The base keeps the asker's case: the names asked and the CNAME target carry it.
    std::string_view base = name.substr(0, name.size() - (1 + ns.size() + 4 + zone.size()));
    std::vector<std::string> list = pod_search_list(ns, zone, node_searches);
    // A domain kubelet had to drop: the Pod's resolver does not ask this name first.
    if (list.empty() || list[0] != namespace_service_prefix(ns) + std::string(zone))
        return std::nullopt;
    std::vector<SearchStep> steps;
    steps.reserve(list.size());
    for (size_t i = 1; i < list.size(); ++i) {
        if (base.size() + list[i].size() > kMaxNameLength) continue;
        steps.push_back(SearchStep{std::string(base) + list[i], i});
    }
    steps.push_back(SearchStep{std::string(base) + '\0', list.size()});
    return steps;
}

}  // namespace sb::dns
