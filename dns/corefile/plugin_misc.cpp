// The small plugins: `loadbalance` and `autopath @kubernetes` (flags the
// server honours), `loop` (accepted, nothing to do) and every CoreDNS plugin
// switchboard lacks (a warning).
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include "base/go_duration.h"

namespace sb::dns {

// `autopath [ZONE...] RESOLV-CONF`: only `autopath @kubernetes`, the
// Pod's own search path, is served; a resolv.conf file or zones are
// warned about and leave it off.
Status map_autopath(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 1, SIZE_MAX); !s) return s;
    if (auto s = context.no_block(d); !s) return s;
    if (d.args.size() == 1 && d.args[0] == "@kubernetes") {
        server.autopath = true;
        return {};
    }
    context.warn(d.line, fmt::format("autopath {}{} is not supported (only `autopath "
                                     "@kubernetes`); the server runs without it",
                                     escaped_for_message(d.args.back()),
                                     d.args.size() > 1 ? " with zones" : ""));
    return {};
}

namespace {

// `loadbalance weighted FILE { reload DURATION }`, checked as CoreDNS's
// setup does, then refused: weighted round robin (answers picked by the
// weights file) is not implemented, and shuffling instead would give
// other answers.
Status check_weighted(const CorefileDirective& d, const MapContext& context) {
    if (d.args.size() < 2) return context.at(d.line, "loadbalance: missing weight file argument");
    if (d.args.size() > 2) return context.at(d.line, "loadbalance: unexpected argument(s)");
    for (const auto& o : d.block) {
        if (o.name != "reload") return context.unknown_option("loadbalance", o);
        if (auto s = context.count(o, 1, 1); !s) return s;
        if (!parse_go_duration(o.args[0])) {
            return context.at(o.line, fmt::format("loadbalance: invalid reload duration {}",
                                                  escaped_for_message(o.args[0])));
        }
    }
    return context.at(d.line, "loadbalance: policy weighted is not supported (round_robin only)");
}

}  // namespace

// `loadbalance [round_robin] { prefer CIDR... }` or `loadbalance weighted
// FILE ...`: only the round_robin shuffle is served.
Status map_loadbalance(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (!d.args.empty() && d.args[0] == "weighted") return check_weighted(d, context);
    if (!d.args.empty() && d.args[0] != "round_robin") {
        return context.at(
            d.line, fmt::format("loadbalance: unknown policy {}", escaped_for_message(d.args[0])));
    }
    if (d.args.size() > 1) {
        return context.at(d.line, "loadbalance: unknown property for round_robin");
    }
    for (const auto& o : d.block) {
        if (o.name != "prefer") return context.unknown_option("loadbalance", o);
        for (const auto& cidr : o.args) {
            if (!Prefix::parse(cidr, true)) {
                return context.at(
                    o.line, fmt::format("loadbalance: invalid CIDR {}", escaped_for_message(cidr)));
            }
        }
        // Answers in these subnets first: an order the shuffle would not give.
        return context.at(o.line, "loadbalance: prefer is not supported");
    }
    server.loadbalance = true;
    return {};
}

// `loop`: accepted, parsed only; switchboard's loop detection is always on
// (docs/corefile.md).
Status map_loop(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 0); !s) return s;
    if (auto s = context.no_block(d); !s) return s;
    server.loop = true;
    return {};
}

Status map_unsupported(const CorefileDirective& d, ServerConfig&, MapContext& context) {
    context.warn_once(d.name, d.line,
                      fmt::format("plugin {} is not supported; the server runs without it",
                                  escaped_for_message(d.name)));
    return {};
}

}  // namespace sb::dns
