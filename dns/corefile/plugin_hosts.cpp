// CoreDNS's plugin/hosts/setup.go: the `hosts` block as a HostsConfig (file,
// zones, inline entries, ttl, reload, fallthrough).
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

namespace sb::dns {

Status map_hosts(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    HostsConfig h;
    h.line = d.line;
    if (!d.args.empty()) {
        h.file = d.args[0];
        auto zones = context.zones_of(d, std::span<const std::string>(d.args).subspan(1));
        if (!zones) return zones.error();
        h.zones = std::move(*zones);
    }
    for (const auto& o : d.block) {
        if (o.name == "ttl") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            auto ttl = context.check(o, parse_number(o.args[0], 1, 65535));
            if (!ttl) return ttl.error();
            h.ttl = *ttl;
        } else if (o.name == "fallthrough_unsupported") {
            if (auto s = context.count(o, 0, 0); !s) return s;
            h.fallthrough_unsupported = true;
        } else if (o.name == "no_reverse") {
            if (auto s = context.count(o, 0, 0); !s) return s;
            h.no_reverse = true;
        } else if (o.name == "reload") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            auto interval = context.check(o, parse_duration(o.args[0]));
            if (!interval) return interval.error();
            h.reload = *interval;
        } else if (o.name == "fallthrough") {
            auto f = context.fallthrough(o);
            if (!f) return f.error();
            h.fallthrough = std::move(*f);
        } else if (auto address = IpAddress::parse(o.name)) {
            // CoreDNS reads inline entries only before `fallthrough`; after
            // it, a line is an unknown property.
            if (h.fallthrough) {
                return context.at(o.line, fmt::format("hosts: unknown property {} (inline entries "
                                                      "come before fallthrough)",
                                                      escaped_for_message(o.name)));
            }
            if (o.args.empty()) {
                return context.at(
                    o.line, fmt::format("hosts: {} has no name", escaped_for_message(o.name)));
            }
            HostsEntry entry{*address, {}};
            for (const auto& arg : o.args) {
                auto name = normalize_zone(arg);
                if (!name || name->port) {
                    return context.at(o.line, fmt::format("hosts: {} is not a host name",
                                                          escaped_for_message(arg)));
                }
                entry.names.push_back(name->zone);
            }
            h.inline_entries.push_back(std::move(entry));
        } else {
            return context.at(o.line,
                              fmt::format("hosts: {} is neither an option nor an IP address",
                                          escaped_for_message(o.name)));
        }
    }
    if (h.fallthrough_unsupported && !h.fallthrough) {
        return context.at(d.line, "hosts: fallthrough_unsupported requires fallthrough");
    }
    server.hosts = std::move(h);
    return {};
}

}  // namespace sb::dns
