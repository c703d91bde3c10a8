#include "dns/corefile/options.h"

#include <fmt/format.h>

#include <algorithm>

#include "dns/corefile/plugin_cache.h"
#include "dns/forward/forward.h"
#include "dns/search_path/resolv_conf.h"
#include "dns/wire/wire.h"

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

// A Corefile forward's options as the forwarder takes them, with CoreDNS's
// defaults for what the Corefile cannot say (docs/corefile.md).
ForwardSetOptions set_options(const ForwardConfig& forward) {
    ForwardSetOptions options;
    switch (forward.policy) {
        case ForwardPolicy::kRandom:
            options.policy = UpstreamPolicy::kRandom;
            break;
        case ForwardPolicy::kRoundRobin:
            options.policy = UpstreamPolicy::kRoundRobin;
            break;
        case ForwardPolicy::kSequential:
            options.policy = UpstreamPolicy::kSequential;
            break;
    }
    // force_tcp wins over prefer_udp, as in CoreDNS's connect.go.
    options.protocol = forward.force_tcp    ? UpstreamProtocol::kTcp
                       : forward.prefer_udp ? UpstreamProtocol::kUdp
                                            : UpstreamProtocol::kClient;
    options.max_concurrent = forward.max_concurrent;
    options.max_fails = forward.max_fails;
    options.health_check = forward.health_check;
    options.failover_rcodes = forward.failover;
    options.max_attempts = forward.max_connect_attempts.value_or(0);
    options.read_timeout = forward.read_timeout;
    options.source = forward.source_address;
    options.failfast_all_down = forward.failfast_all_unhealthy_upstreams;
    options.tls = forward.tls;
    for (const auto& target : forward.to) {
        if (!target.tls || !target.address || !forward.tls) continue;
        options.tls_upstreams.push_back(
            TlsUpstream{*target.address, target.tls_servername.empty() ? forward.tls->server_name()
                                                                       : target.tls_servername});
    }
    options.except = wire_zones(forward.except);
    return options;
}

// The kubernetes block's `forward FROM` besides `forward .`: a set for the
// names under FROM (docs/corefile.md). A FROM inside the cluster zone never
// sees a name (the cluster zone is answered from the cluster): warned.
void cluster_block_sets(const ServerConfig& cluster, const std::string& cluster_wire,
                        std::string_view path, std::vector<StubZone>& stubs,
                        std::vector<std::string>& warnings) {
    for (const auto& forward : cluster.forwards) {
        if (forward.from == ".") continue;
        auto wire = name_from_text(forward.from);
        if (!wire) continue;  // map_corefile normalised every zone
        std::string lower = name_lower(*wire);
        if (name_is_under(lower, cluster_wire)) {
            warnings.push_back(
                fmt::format("{}:{}: forward {} is inside the cluster zone, which is answered "
                            "from the cluster; ignored",
                            path, forward.line, forward.from));
            continue;
        }
        stubs.push_back(StubZone{lower, target_addresses(forward.to), set_options(forward), true});
    }
}

// Every server block but the cluster block is a stub domain: each of its
// zones forwards to the block's `forward .` (or `forward ZONE`). What
// switchboard cannot serve that way is warned and left out.
std::vector<StubZone> stub_zones(const CorefileConfig& config, const ServerConfig& cluster,
                                 const std::string& cluster_wire, std::string_view path,
                                 std::vector<std::string>& warnings) {
    std::vector<StubZone> stubs;
    auto warn = [&](int line, const std::string& why) {
        warnings.push_back(fmt::format("{}:{}: {}", path, line, why));
    };
    for (const auto& server : config.servers) {
        if (&server == &cluster) continue;
        if (server.port != cluster.port) {
            warn(server.line, fmt::format("server block on port {} is not served: switchboard "
                                          "answers only the kubernetes block's port {}",
                                          server.port, cluster.port));
            continue;
        }
        for (const auto& zone : server.zones) {
            auto wire = name_from_text(zone);
            if (!wire) continue;  // map_corefile normalised every zone
            std::string lower = name_lower(*wire);
            if (name_is_under(lower, cluster_wire)) {
                warn(server.line, fmt::format("zone {} is inside the cluster zone, which is "
                                              "answered from the cluster; block ignored for it",
                                              zone));
                continue;
            }
            auto forward = std::find_if(
                server.forwards.begin(), server.forwards.end(),
                [&](const ForwardConfig& f) { return f.from == "." || f.from == zone; });
            if (forward == server.forwards.end()) {
                warn(server.line, fmt::format("zone {} has no forward: its names go to the "
                                              "kubernetes block's upstreams",
                                              zone));
                continue;
            }
            stubs.push_back(StubZone{lower, target_addresses(forward->to), set_options(*forward)});
        }
    }
    return stubs;
}

// Normalised zones (text, trailing dot) as a ZoneSet; map_corefile
// validated every one.
ZoneSet zone_set(const std::vector<std::string>& zones) {
    return ZoneSet{wire_zones(zones)};
}

// `fallthrough [ZONES]`: no zones means every zone of the plugin.
std::optional<ZoneSet> fallthrough_zones(const std::optional<Fallthrough>& fallthrough,
                                         const ZoneSet& plugin_zones) {
    if (!fallthrough) return std::nullopt;
    return fallthrough->zones.empty() ? plugin_zones : zone_set(fallthrough->zones);
}

// The kubernetes options beyond domain, ttl and pods: its reverse zones
// (where the zone's PTRs are answered; a zone that is neither reverse nor
// the cluster domain is warned and not served), fallthrough,
// endpoint_pod_names and noendpoints.
void apply_kubernetes(const KubernetesConfig& k, const std::string& domain, std::string_view path,
                      DnsOptions& options, std::vector<std::string>& warnings) {
    std::vector<std::string> reverse;
    for (const auto& zone : k.zones) {
        if (is_reverse_zone(zone)) {
            reverse.push_back(zone);
        } else if (zone != domain) {
            warnings.push_back(
                fmt::format("{}:{}: kubernetes zone {} is not served: switchboard serves one "
                            "cluster zone ({}) and reverse zones",
                            path, k.line, zone, domain));
        }
    }
    options.cluster.reverse_zones = zone_set(reverse);
    ZoneSet served = zone_set(reverse);
    for (auto& zone : zone_set({domain}).zones) served.zones.push_back(std::move(zone));
    options.cluster.fallthrough = fallthrough_zones(k.fallthrough, served).value_or(ZoneSet{});
    options.endpoint_pod_names = k.endpoint_pod_names;
    options.endpoints = !k.noendpoints;
}

// The hosts plugin of the cluster block: its zones default to the block's.
HostsOptions hosts_options(const HostsConfig& h, const ServerConfig& server) {
    HostsOptions hosts;
    hosts.file = h.file;
    hosts.zones = zone_set(h.zones.empty() ? server.zones : h.zones);
    for (const auto& entry : h.inline_entries) {
        for (const auto& name : entry.names) {
            auto wire = name_from_text(name);
            if (!wire) continue;
            std::string lower = name_lower(*wire);
            // As in the file, names outside the plugin's zones are not read.
            if (hosts.zones.matches(lower)) {
                hosts.inline_mappings.push_back(HostsMapping{entry.address, std::move(lower)});
            }
        }
    }
    hosts.ttl = h.ttl;
    hosts.reverse = !h.no_reverse;
    hosts.reload = h.reload;
    hosts.fallthrough = fallthrough_zones(h.fallthrough, hosts.zones);
    hosts.fallthrough_unsupported = h.fallthrough_unsupported;
    return hosts;
}

// A server block's `log` rules and `errors`, over the block's zones.
QueryLogBlock query_log_block(const ServerConfig& server) {
    QueryLogBlock block;
    block.zones = wire_zones(server.zones);
    for (const auto& rule : server.log) {
        block.rules.push_back(
            QueryLogRule{wire_zones({rule.name}), parse_log_format(rule.format), rule.classes,
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
        return invalid(fmt::format("{}:{}: {}", path, line, why));
    };
    const ServerConfig* cluster = nullptr;
    for (const auto& server : config->servers) {
        if (!server.kubernetes) continue;
        if (cluster != nullptr) {
            return at(server.kubernetes->line,
                      fmt::format("kubernetes is already configured at line {}; switchboard "
                                  "serves one cluster zone",
                                  cluster->kubernetes->line));
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
        warnings.push_back(fmt::format(
            "{}:{}: the cluster domain is {}, not {} (--cluster-domain): the Corefile wins", path,
            k.line, cluster_domain, options.cluster_domain));
    }
    options.cluster_domain = cluster_domain;
    options.ttl = k.ttl;
    options.pods = k.pods;
    apply_kubernetes(k, *domain, path, options, warnings);
    if (cluster->hosts) options.hosts = hosts_options(*cluster->hosts, *cluster);
    for (const auto& server : config->servers) {
        if (&server != cluster && server.hosts) {
            warnings.push_back(
                fmt::format("{}:{}: hosts is served only in the kubernetes block; ignored here",
                            path, server.hosts->line));
        }
    }
    options.shuffle = cluster->loadbalance ? AnswerShuffle::kAll : AnswerShuffle::kNone;
    // The Corefile wins over --dns-autopath, as over the other --dns-* flags.
    if (options.autopath && !cluster->autopath) {
        warnings.push_back(fmt::format(
            "{}:{}: the kubernetes block has no `autopath @kubernetes`: --dns-autopath is off "
            "(the Corefile wins)",
            path, cluster->line));
    }
    options.autopath = cluster->autopath;
    for (const auto& server : config->servers) {
        if (&server != cluster && server.autopath) {
            warnings.push_back(
                fmt::format("{}:{}: autopath is served only in the kubernetes block; ignored here",
                            path, server.line));
        }
    }
    auto root = std::find_if(cluster->forwards.begin(), cluster->forwards.end(),
                             [](const ForwardConfig& f) { return f.from == "."; });
    if (root != cluster->forwards.end()) {
        options.upstreams.clear();
        if (root->to.size() == 1 && !root->to[0].address) {
            options.resolv_conf = root->to[0].resolv_conf;
        } else {
            options.upstreams = target_addresses(root->to);
        }
        options.forward = set_options(*root);
    }
    auto cluster_wire = name_from_text(cluster_domain);
    if (!cluster_wire) {
        return at(k.line, fmt::format("kubernetes: {}", cluster_wire.error().message));
    }
    options.stubs = stub_zones(*config, *cluster, name_lower(*cluster_wire), path, warnings);
    options.caches = corefile_cache_blocks(*config, *cluster);
    cluster_block_sets(*cluster, name_lower(*cluster_wire), path, options.stubs, warnings);
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
        warnings.push_back(fmt::format(
            "{}:{}: DNS stays off: the server block has no bind and --dns-listen is empty", path,
            cluster->line));
    }
    // The kubernetes block's: one server serves every block of its port.
    if (cluster->timeouts) {
        if (cluster->timeouts->read) options.tcp_read_timeout = *cluster->timeouts->read;
        if (cluster->timeouts->idle) options.tcp_idle_timeout = *cluster->timeouts->idle;
    }
    if (typed != nullptr) *typed = std::move(*config);
    return warnings;
}

}  // namespace sb::dns
