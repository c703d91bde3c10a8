#include "dns/corefile_options.h"

#include <algorithm>

#include "dns/forward.h"

namespace sb::dns {

namespace {

Error invalid(std::string why) {
    return make_error(ErrorCode::kInvalidArgument, std::move(why));
}

bool is_reverse_zone(const std::string& zone) {
    return zone.ends_with("in-addr.arpa.") || zone.ends_with("ip6.arpa.");
}

}  // namespace

Result<std::vector<std::string>> apply_corefile(std::string_view text, std::string_view path,
                                                const EnvironmentLookup& lookup,
                                                DnsOptions& options, bool local_addresses_serve) {
    auto parsed = parse_corefile(text, path, lookup);
    if (!parsed) return parsed.error();
    auto config = map_corefile(*parsed, path);
    if (!config) return config.error();
    auto at = [&](int line, const std::string& why) {
        return invalid(std::string(path) + ":" + std::to_string(line) + ": " + why);
    };
    const ServerConfig* cluster = nullptr;
    for (const auto& server : config->servers) {
        if (!server.kubernetes) continue;
        if (cluster != nullptr) {
            return at(server.kubernetes->line, "kubernetes is already configured at line " +
                                                   std::to_string(cluster->kubernetes->line) +
                                                   "; switchboard serves one cluster zone");
        }
        cluster = &server;
    }
    if (cluster == nullptr) {
        return at(1,
                  "no server block has the kubernetes plugin; switchboard needs it for the "
                  "cluster zone");
    }
    const KubernetesConfig& k = *cluster->kubernetes;
    auto domain = std::find_if(k.zones.begin(), k.zones.end(),
                               [](const std::string& zone) { return !is_reverse_zone(zone); });
    if (domain == k.zones.end() || *domain == ".") {
        return at(k.line, "kubernetes needs the cluster domain (e.g. cluster.local) as a zone");
    }
    std::vector<std::string> warnings = std::move(config->warnings);
    std::string cluster_domain = domain->substr(0, domain->size() - 1);
    if (cluster_domain != options.cluster_domain) {
        warnings.push_back(std::string(path) + ":" + std::to_string(k.line) +
                           ": the cluster domain is " + cluster_domain + ", not " +
                           options.cluster_domain + " (--cluster-domain): the Corefile wins");
    }
    options.cluster_domain = cluster_domain;
    options.ttl = k.ttl;
    options.pods = k.pods;
    auto root = std::find_if(cluster->forwards.begin(), cluster->forwards.end(),
                             [](const ForwardConfig& f) { return f.from == "."; });
    if (root != cluster->forwards.end()) {
        options.upstreams.clear();
        if (root->to.size() == 1 && !root->to[0].address) {
            options.resolv_conf = root->to[0].resolv_conf;
        } else {
            for (const auto& target : root->to) {
                if (target.address) {
                    options.upstreams.push_back(*target.address);
                } else {
                    auto nameservers = resolv_conf_nameservers(target.resolv_conf);
                    options.upstreams.insert(options.upstreams.end(), nameservers.begin(),
                                             nameservers.end());
                }
            }
        }
    }
    if (!cluster->bind.empty()) {
        options.listen.clear();
        for (const auto& address : cluster->bind) {
            options.listen.push_back(HostPort{address, cluster->port});
        }
    } else if (!options.listen.empty()) {
        for (auto& listen : options.listen) listen.port = cluster->port;
    } else if (!local_addresses_serve) {
        warnings.push_back(std::string(path) + ":" + std::to_string(cluster->line) +
                           ": DNS stays off: the server block has no bind and --dns-listen is "
                           "empty");
    }
    return warnings;
}

}  // namespace sb::dns
