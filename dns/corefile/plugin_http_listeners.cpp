// CoreDNS's plugin/{prometheus,health,ready}/setup.go: the HTTP listeners
// the daemon opens (proxy/http/coredns_endpoints), as HttpListen values.
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <cstdint>

namespace sb::dns {

namespace {

// ADDR of prometheus, health and ready: [HOST]:PORT, HOST an IP address,
// "localhost" or empty (every address).
Result<HttpListen> parse_http_listen(std::string_view text) {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        return invalid_argument(
            fmt::format("{} is not an address (HOST:PORT or :PORT)", escaped_for_message(text)));
    }
    std::string host(text.substr(0, colon));
    auto port = parse_number(text.substr(colon + 1), 1, 65535);
    if (!port) {
        return invalid_argument(
            fmt::format("{}: port {}", escaped_for_message(text), port.error().message));
    }
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (!host.empty() && host != "localhost" && !IpAddress::parse(host)) {
        return invalid_argument(fmt::format("{}: {} is not an IP address or localhost",
                                            escaped_for_message(text), escaped_for_message(host)));
    }
    return HttpListen{host, static_cast<uint16_t>(*port)};
}

// `prometheus [ADDR]` and `ready [ADDR]`: `fallback` without ADDR.
Result<HttpListen> listen_of(const CorefileDirective& d, HttpListen fallback,
                             const MapContext& context) {
    if (auto s = context.count(d, 0, 1); !s) return s.error();
    if (d.args.empty()) return fallback;
    return context.check(d, parse_http_listen(d.args[0]));
}

}  // namespace

Status map_prometheus(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    auto listen = listen_of(d, HttpListen{"localhost", 9153}, context);
    if (!listen) return listen.error();
    for (const auto& o : d.block) {
        if (o.name == "runtime_metrics") {
            // Go's runtime metrics: there is no Go runtime to describe.
            if (auto s = context.count(o, 0, 0); !s) return s;
            context.warn(o.line,
                         "prometheus: runtime_metrics (Go runtime metrics) has no "
                         "equivalent; ignored");
        } else if (o.name == "tls") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            return context.at(o.line,
                              "prometheus: tls is not supported (metrics are served "
                              "over plain HTTP)");
        } else {
            return context.at(
                o.line, fmt::format("prometheus: unknown option {}", escaped_for_message(o.name)));
        }
    }
    server.prometheus = *listen;
    return {};
}

Status map_ready(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    auto listen = listen_of(d, HttpListen{"", 8181}, context);
    if (!listen) return listen.error();
    // `monitor until-ready|continuously`: /ready is evaluated at every
    // request, which is `continuously`; `until-ready` (CoreDNS's default)
    // is taken as that default (docs/corefile.md, Differences from CoreDNS).
    for (const auto& o : d.block) {
        if (o.name != "monitor") return context.unknown_option("ready", o);
        if (auto s = context.count(o, 1, 1); !s) return s;
        if (o.args[0] != "until-ready" && o.args[0] != "continuously") {
            return context.at(o.line, fmt::format("ready: monitor type {} not supported "
                                                  "(until-ready, continuously)",
                                                  escaped_for_message(o.args[0])));
        }
    }
    server.ready = *listen;
    return {};
}

Status map_health(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 1); !s) return s;
    HealthConfig h;
    h.line = d.line;
    if (!d.args.empty()) {
        auto listen = context.check(d, parse_http_listen(d.args[0]));
        if (!listen) return listen.error();
        h.listen = *listen;
    }
    for (const auto& o : d.block) {
        if (o.name != "lameduck") return context.unknown_option("health", o);
        if (auto s = context.count(o, 1, 1); !s) return s;
        auto lameduck = context.check(o, parse_duration(o.args[0]));
        if (!lameduck) return lameduck.error();
        h.lameduck = *lameduck;
    }
    server.health = h;
    return {};
}

}  // namespace sb::dns
