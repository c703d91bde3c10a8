#include "dns/corefile_options.h"

#include <algorithm>

#include "dns/forward.h"
#include "dns/wire.h"

namespace sb::dns {

namespace {

Error invalid(std::string why) {
    return make_error(ErrorCode::kInvalidArgument, std::move(why));
}

bool is_reverse_zone(const std::string& zone) {
    return zone.ends_with("in-addr.arpa.") || zone.ends_with("ip6.arpa.");
}

// forward's TO list as addresses: files (resolv.conf) read now, their
// nameservers in their place.
std::vector<HostPort> target_addresses(const std::vector<ForwardTarget>& targets) {
    std::vector<HostPort> addresses;
    for (const auto& target : targets) {
        if (target.address) {
            addresses.push_back(*target.address);
        } else {
            auto nameservers = resolv_conf_nameservers(target.resolv_conf);
            addresses.insert(addresses.end(), nameservers.begin(), nameservers.end());
        }
    }
    return addresses;
}

// Every server block but the cluster block is a stub domain: each of its
// zones forwards to the block's `forward .` (or `forward ZONE`). What
// switchboard cannot serve that way is warned and left out.
std::vector<StubZone> stub_zones(const CorefileConfig& config, const ServerConfig& cluster,
                                 const std::string& cluster_wire, std::string_view path,
                                 std::vector<std::string>& warnings) {
    std::vector<StubZone> stubs;
    auto warn = [&](int line, const std::string& why) {
        warnings.push_back(std::string(path) + ":" + std::to_string(line) + ": " + why);
    };
    for (const auto& server : config.servers) {
        if (&server == &cluster) continue;
        if (server.port != cluster.port) {
            warn(server.line, "server block on port " + std::to_string(server.port) +
                                  " is not served: switchboard answers only the kubernetes "
                                  "block's port " +
                                  std::to_string(cluster.port));
            continue;
        }
        for (const auto& zone : server.zones) {
            auto wire = name_from_text(zone);
            if (!wire) continue;  // map_corefile normalised every zone
            std::string lower = name_lower(*wire);
            if (name_is_under(lower, cluster_wire)) {
                warn(server.line, "zone " + zone +
                                      " is inside the cluster zone, which is answered from the "
                                      "cluster; block ignored for it");
                continue;
            }
            auto forward = std::find_if(
                server.forwards.begin(), server.forwards.end(),
                [&](const ForwardConfig& f) { return f.from == "." || f.from == zone; });
            if (forward == server.forwards.end()) {
                warn(server.line, "zone " + zone +
                                      " has no forward: its names go to the kubernetes block's "
                                      "upstreams");
                continue;
            }
            stubs.push_back(StubZone{lower, target_addresses(forward->to)});
        }
    }
    return stubs;
}

// A server block's `log` rules and `errors`, over the block's zones.
QueryLogBlock query_log_block(const ServerConfig& server) {
    QueryLogBlock block;
    auto wire = [](const std::string& zone) {
        auto name = name_from_text(zone);
        return name ? name_lower(*name) : std::string(1, '\0');  // map_corefile normalised it
    };
    for (const auto& zone : server.zones) block.zones.push_back(wire(zone));
    for (const auto& rule : server.log) {
        block.rules.push_back(
            QueryLogRule{{wire(rule.name)},
                         parse_log_format(rule.format),
                         rule.classes,
                         std::chrono::duration<double>(rule.min_duration).count()});
    }
    block.errors = server.errors;
    return block;
}

}  // namespace

Result<std::vector<std::string>> apply_corefile(std::string_view text, std::string_view path,
                                                const EnvironmentLookup& lookup,
                                                DnsOptions& options, bool local_addresses_serve,
                                                CorefileConfig* typed) {
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
            options.upstreams = target_addresses(root->to);
        }
    }
    auto cluster_wire = name_from_text(cluster_domain);
    if (!cluster_wire) return at(k.line, "kubernetes: " + cluster_wire.error().message);
    options.stubs = stub_zones(*config, *cluster, name_lower(*cluster_wire), path, warnings);
    // Every block served on the port logs its own queries (a stub block
    // without `log` keeps its names out of the cluster block's log).
    options.query_log.blocks.clear();
    for (const auto& server : config->servers) {
        if (server.port == cluster->port)
            options.query_log.blocks.push_back(query_log_block(server));
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
    if (typed != nullptr) *typed = std::move(*config);
    return warnings;
}

}  // namespace sb::dns
