#include "dns/corefile/config.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "dns/corefile/plugins.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

// Every plugin of CoreDNS's plugin.cfg (core/dnsserver/zdirectives.go, 1.14.7):
// those switchboard does not implement are warned about, names outside
// this list are errors as in CoreDNS ("unknown directive").
const std::set<std::string_view>& coredns_plugins() {
    static const std::set<std::string_view> names = {
        "root",        "metadata",    "geoip",    "cancel",       "tls",        "timeouts",
        "multisocket", "reload",      "nsid",     "bufsize",      "bind",       "debug",
        "trace",       "ready",       "health",   "pprof",        "prometheus", "errors",
        "log",         "dnstap",      "local",    "dns64",        "acl",        "any",
        "chaos",       "loadbalance", "tsig",     "cache",        "rewrite",    "header",
        "dnssec",      "autopath",    "minimal",  "template",     "transfer",   "hosts",
        "route53",     "azure",       "clouddns", "k8s_external", "kubernetes", "file",
        "auto",        "secondary",   "etcd",     "loop",         "forward",    "grpc",
        "erratic",     "whoami",      "on",       "sign",         "view",       "rrl",
        "quic",        "grpc_server", "https",    "https3",       "proxyproto", "nomad",
        "shed",
    };
    return names;
}

// A plugin switchboard maps: its mapping, and whether a second line in one
// server block is refused, as CoreDNS's setups refuse it (plugin.ErrOnce).
// forward, log and bind read every line; timeouts adds to the first.
struct Plugin {
    MapPlugin* map;
    bool once_per_block;
};

// One row per plugin; a CoreDNS plugin without a row is map_unsupported's.
const std::map<std::string_view, Plugin>& plugin_table() {
    static const std::map<std::string_view, Plugin> table = {
        {"kubernetes", {map_kubernetes, true}},
        {"forward", {map_forward, false}},
        {"cache", {map_cache, true}},
        {"hosts", {map_hosts, true}},
        {"log", {map_log, false}},
        {"errors", {map_errors, true}},
        {"prometheus", {map_prometheus, true}},
        {"health", {map_health, true}},
        {"ready", {map_ready, true}},
        {"bind", {map_bind, false}},
        {"reload", {map_reload, true}},
        {"timeouts", {map_timeouts, false}},
        {"loadbalance", {map_loadbalance, true}},
        {"loop", {map_loop, true}},
        {"autopath", {map_autopath, false}},
    };
    return table;
}

Result<ServerConfig> map_block(const CorefileServerBlock& block, MapContext& context) {
    ServerConfig server;
    server.line = block.line;
    server.port = block.zones.front().port;
    for (const auto& zone : block.zones) {
        if (zone.port != server.port) {
            return context.at(zone.line,
                              fmt::format("the zones of a server block must share one port ({} "
                                          "and {})",
                                          server.port, zone.port));
        }
        server.zones.push_back(zone.zone);
    }
    std::map<std::string, int> used;
    for (const auto& directive : block.directives) {
        const std::string& name = directive.name;
        if (!coredns_plugins().contains(name)) {
            return context.at(directive.line,
                              fmt::format("unknown directive {}", escaped_for_message(name)));
        }
        auto plugin = plugin_table().find(name);
        if (plugin == plugin_table().end()) {
            // A plugin switchboard only warns about is not checked (rewrite,
            // template, ... take many lines).
            if (auto status = map_unsupported(directive, server, context); !status) {
                return status.error();
            }
            continue;
        }
        if (plugin->second.once_per_block) {
            auto [it, fresh] = used.emplace(name, directive.line);
            if (!fresh) {
                return context.at(directive.line,
                                  fmt::format("{} can only be used once per server block (also "
                                              "at line {})",
                                              name, it->second));
            }
        }
        if (auto status = plugin->second.map(directive, server, context); !status) {
            return status.error();
        }
    }
    return server;
}

// The zones served so far, by (zone, port, bind address; nullopt: every
// address), with their lines. CoreDNS (core/dnsserver's zone overlap check)
// refuses a zone served twice on one address, and a zone served both on
// every address and on some: one listener would take the other's queries.
class ServedZones {
  public:
    // Registers `zone` of the block `server` at `line`, or says which block
    // it collides with.
    Status add(const CorefileZone& zone, const ServerConfig& server, const MapContext& context) {
        std::vector<std::optional<IpAddress>> addresses(server.bind.begin(), server.bind.end());
        if (addresses.empty()) addresses.emplace_back();
        const std::string name = escaped_for_message(fmt::format("{}:{}", zone.zone, zone.port));
        for (const auto& address : addresses) {
            const Key key{zone.zone, zone.port, address};
            if (auto same = served_.find(key); same != served_.end()) {
                return context.at(zone.line, fmt::format("zone {} is already served by the "
                                                         "block at line {}",
                                                         name, same->second));
            }
            if (auto other = overlapping(key); other != served_.end()) {
                return context.at(
                    zone.line,
                    fmt::format("zone {} {} overlaps the block at line {}, which serves it {}",
                                name, where(address), other->second,
                                where(std::get<2>(other->first))));
            }
        }
        for (const auto& address : addresses)
            served_.emplace(Key{zone.zone, zone.port, address}, zone.line);
        return {};
    }

  private:
    using Key = std::tuple<std::string, uint16_t, std::optional<IpAddress>>;

    // An entry of the same zone and port whose listener covers `key`'s:
    // the unbound one for a bound key, any bound one for an unbound key.
    std::map<Key, int>::const_iterator overlapping(const Key& key) const {
        const auto& [zone, port, address] = key;
        if (address) return served_.find(Key{zone, port, std::nullopt});
        auto next = served_.upper_bound(key);  // nullopt sorts first
        if (next != served_.end() && std::get<0>(next->first) == zone &&
            std::get<1>(next->first) == port) {
            return next;
        }
        return served_.end();
    }

    static std::string where(const std::optional<IpAddress>& address) {
        return address ? fmt::format("on {}", *address) : "on every address (no bind)";
    }

    std::map<Key, int> served_;
};

}  // namespace

Result<CorefileConfig> map_corefile(const Corefile& corefile, std::string_view path) {
    MapContext context(path);
    CorefileConfig config;
    ServedZones served;
    for (const auto& block : corefile.blocks) {
        auto server = map_block(block, context);
        if (!server) return server.error();
        for (const auto& zone : block.zones) {
            if (auto status = served.add(zone, *server, context); !status) return status.error();
        }
        config.servers.push_back(std::move(*server));
    }
    config.warnings = context.take_warnings();
    return config;
}

std::vector<std::string> wire_zones(const std::vector<std::string>& zones) {
    std::vector<std::string> wire;
    for (const auto& zone : zones) {
        if (auto name = name_from_text(zone)) wire.push_back(name_lower(*name));
    }
    return wire;
}

}  // namespace sb::dns
