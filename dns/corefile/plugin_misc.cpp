// The small plugins: `loadbalance` and `autopath @kubernetes` (flags the
// server honours), `loop` (accepted, nothing to do) and every CoreDNS plugin
// switchboard lacks (a warning).
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

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

Status map_loadbalance(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 1); !s) return s;
    if (auto s = context.no_block(d); !s) return s;
    if (!d.args.empty() && d.args[0] != "round_robin") {
        return context.at(d.line, fmt::format("loadbalance: policy {} is not supported "
                                              "(round_robin only)",
                                              escaped_for_message(d.args[0])));
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
