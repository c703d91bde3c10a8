// The plugins that configure the server itself: `bind` (listen addresses),
// `reload` (the Corefile's re-read) and `timeouts` (DNS over TCP), as
// CoreDNS's plugin/{bind,reload,timeouts}/setup.go check them.
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <algorithm>
#include <span>
#include <vector>

namespace sb::dns {

Status map_reload(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 2); !s) return s;
    if (auto s = context.no_block(d); !s) return s;
    ReloadConfig r;
    r.line = d.line;
    if (!d.args.empty()) {
        auto interval = context.check(d, parse_duration(d.args[0]));
        if (!interval) return interval.error();
        r.interval = *interval;
        // CoreDNS's default jitter is half the default interval; with an
        // interval given it stays 15s unless that breaks the rule below.
        r.jitter = std::min(r.jitter, r.interval / 2);
    }
    if (d.args.size() > 1) {
        auto jitter = context.check(d, parse_duration(d.args[1]));
        if (!jitter) return jitter.error();
        r.jitter = *jitter;
    }
    if (r.interval < std::chrono::seconds(2)) {
        return context.at(d.line, "reload: interval must be at least 2s");
    }
    // CoreDNS: 0 is no jitter (every INTERVAL exactly).
    if (r.jitter.count() != 0 && r.jitter < std::chrono::seconds(1)) {
        return context.at(d.line, "reload: jitter must be 0 or at least 1s");
    }
    // CoreDNS: a jitter over half the interval is set to half of it.
    r.jitter = std::min(r.jitter, r.interval / 2);
    server.reload = r;
    return {};
}

// CoreDNS's plugin/timeouts: a block of `read|write|idle DURATION` and
// `maxtcpqueries N`, at least one; a later `timeouts` adds to the first.
Status map_timeouts(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 0); !s) return s;
    TimeoutsConfig t = server.timeouts.value_or(TimeoutsConfig{});
    t.line = d.line;
    for (const auto& o : d.block) {
        if (auto s = context.count(o, 1, 1); !s) return s;
        if (o.name == "maxtcpqueries") {
            // -1 (unlimited) or positive; parse_number's uint32 holds -1 as 2^32-1.
            auto n = context.check(o, parse_number(o.args[0], -1, INT32_MAX));
            if (!n) return n.error();
            if (*n == 0) {
                return context.at(o.line,
                                  "timeouts: maxtcpqueries must be -1 (unlimited) or positive");
            }
            context.warn(o.line,
                         "timeouts: maxtcpqueries is not supported; a TCP connection serves "
                         "any number of queries");
            continue;
        }
        if (o.name != "read" && o.name != "write" && o.name != "idle") {
            return context.at(
                o.line, fmt::format("timeouts: unknown option {}", escaped_for_message(o.name)));
        }
        // CoreDNS's durations.NewDurationFromArg: a bare integer is seconds.
        const std::string& arg = o.args[0];
        const bool integer = parse_number(arg, INT32_MIN, INT32_MAX).ok();
        auto value = context.check(o, parse_duration(integer ? arg + "s" : arg));
        if (!value) return value.error();
        if (*value < std::chrono::seconds(1) || *value > std::chrono::hours(24)) {
            return context.at(o.line,
                              fmt::format("timeouts: {} must be between 1s and 24h", o.name));
        }
        if (o.name == "write") {
            context.warn(o.line,
                         "timeouts: write is not supported; a client that stops reading is "
                         "closed by the idle timeout");
            continue;
        }
        (o.name == "read" ? t.read : t.idle) = *value;
    }
    if (d.block.empty()) return context.at(d.line, "timeouts: a timeouts block with no timeouts");
    server.timeouts = t;
    return {};
}

namespace {

// bind's addresses: IP addresses only. CoreDNS also takes an interface's
// name (its addresses when the server starts, link-local IPv6 ones with
// their zone); switchboard's listeners take no zone, so a name is refused.
Result<std::vector<IpAddress>> bind_addresses(const CorefileDirective& d,
                                              std::span<const std::string> args,
                                              const MapContext& context) {
    std::vector<IpAddress> addresses;
    for (const auto& arg : args) {
        auto address = IpAddress::parse(arg);
        if (!address) {
            return context.at(d.line, fmt::format("bind: {} is not an IP address (interface "
                                                  "names are not supported: list the "
                                                  "interface's addresses)",
                                                  escaped_for_message(arg)));
        }
        addresses.push_back(*address);
    }
    return addresses;
}

}  // namespace

// `bind ADDRESS... { except ADDRESS... }`: the block's listen addresses,
// adding up over its bind lines, less each line's `except`.
Status map_bind(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (d.args.empty()) {
        return context.at(d.line, "bind: at least one address or interface name is expected");
    }
    auto addresses = bind_addresses(d, d.args, context);
    if (!addresses) return addresses.error();
    std::vector<IpAddress> except;
    for (const auto& o : d.block) {
        if (o.name != "except") {
            return context.at(o.line,
                              fmt::format("bind: invalid option {}", escaped_for_message(o.name)));
        }
        if (o.args.empty()) {
            return context.at(o.line, "bind: except needs at least one address or interface");
        }
        auto excepted = bind_addresses(o, o.args, context);
        if (!excepted) return excepted.error();
        except = std::move(*excepted);
    }
    size_t kept = 0;
    for (const auto& address : *addresses) {
        if (std::find(except.begin(), except.end(), address) == except.end()) {
            server.bind.push_back(address);
            ++kept;
        }
    }
    // No address left would read as "every address" (no bind) here.
    if (kept == 0) return context.at(d.line, "bind: every address is excepted");
    return {};
}

}  // namespace sb::dns
