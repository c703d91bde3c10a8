// CoreDNS's plugin/forward/setup.go: each `forward FROM TO...` block as a
// ForwardConfig (targets, policy, health checks, protocol, except).
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <set>
#include <string_view>

#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

Result<ForwardTarget> forward_target(const CorefileDirective& d, std::string_view text,
                                     const MapContext& context) {
    if (text.starts_with("tls://")) {
        return context.at(d.line, fmt::format("forward: {}: DNS over TLS upstreams are not "
                                              "supported; use a plain address",
                                              escaped_for_message(text)));
    }
    // CoreDNS's forward takes dns:// and tls:// only ("'https' is not
    // supported as a destination protocol"); any other scheme would
    // otherwise pass below for a file name, and every query would fail.
    if (auto transport = transport_other_than_dns(text)) {
        return context.at(d.line,
                          fmt::format("forward: {}: {}:// upstreams are not supported "
                                      "(forward takes dns:// and plain addresses)",
                                      escaped_for_message(text), escaped_for_message(*transport)));
    }
    std::string_view plain = text.starts_with("dns://") ? text.substr(6) : text;
    auto address = parse_host_port(plain, 53);
    if (!address && !plain.empty() && plain.front() != '[') {
        // A bare IPv6 address has colons but no brackets.
        if (auto v6 = IpAddress::parse(plain)) address = HostPort{*v6, 53};
    }
    if (address) return ForwardTarget{*address, ""};
    if (plain.find('/') != std::string_view::npos && plain == text) {
        return ForwardTarget{std::nullopt, std::string(plain)};
    }
    return context.at(d.line, fmt::format("forward: {} is not an IP address or a file",
                                          escaped_for_message(text)));
}

// health_check's options after the interval, as CoreDNS checks them:
// `no_rec` and `domain NAME` (a valid domain name). They shape only the
// probes: parsed, and not acted on (docs/corefile.md).
Status check_health_check_options(const CorefileDirective& o, const MapContext& context) {
    for (size_t i = 1; i < o.args.size(); ++i) {
        if (o.args[i] == "no_rec") continue;
        if (o.args[i] != "domain") {
            return context.at(o.line, fmt::format("health_check: unknown option {}",
                                                  escaped_for_message(o.args[i])));
        }
        if (++i == o.args.size()) return context.at(o.line, "health_check: domain needs a NAME");
        if (auto name = name_from_text(o.args[i]); !name) {
            return context.at(o.line, fmt::format("health_check: invalid domain name {}",
                                                  escaped_for_message(o.args[i])));
        }
    }
    return {};
}

}  // namespace

Status map_forward(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 2, 16); !s) return s;
    ForwardConfig f;
    f.line = d.line;
    auto from = context.check(d, normalize_zone(d.args[0]));
    if (!from) return from.error();
    f.from = from->zone;
    for (const auto& other : server.forwards) {
        if (other.from == f.from) {
            return context.at(d.line, fmt::format("forward {} is already defined at line {}",
                                                  escaped_for_message(f.from), other.line));
        }
    }
    for (size_t i = 1; i < d.args.size(); ++i) {
        auto target = forward_target(d, d.args[i], context);
        if (!target) return target.error();
        f.to.push_back(std::move(*target));
    }
    static const std::set<std::string_view> ignored = {
        "tls", "tls_servername", "max_fails", "expire", "next", "failfast_all_unhealthy_upstreams"};
    for (const auto& o : d.block) {
        if (o.name == "max_concurrent") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            auto n = context.check(o, parse_number(o.args[0], 0, INT32_MAX));
            if (!n) return n.error();
            f.max_concurrent = *n;
        } else if (o.name == "policy") {
            if (auto s = context.count(o, 1, 1); !s) return s;
            const std::string& p = o.args[0];
            if (p == "random") {
                f.policy = ForwardPolicy::kRandom;
            } else if (p == "round_robin") {
                f.policy = ForwardPolicy::kRoundRobin;
            } else if (p == "sequential") {
                f.policy = ForwardPolicy::kSequential;
            } else {
                return context.at(
                    o.line, fmt::format("policy: {} is not one of random, round_robin, sequential",
                                        escaped_for_message(p)));
            }
        } else if (o.name == "health_check") {
            if (auto s = context.count(o, 1, 4); !s) return s;
            auto interval = context.check(o, parse_duration(o.args[0]));
            if (!interval) return interval.error();
            f.health_check = *interval;
            if (auto s = check_health_check_options(o, context); !s) return s;
        } else if (o.name == "force_tcp" || o.name == "prefer_udp") {
            if (auto s = context.count(o, 0, 0); !s) return s;
            (o.name == "force_tcp" ? f.force_tcp : f.prefer_udp) = true;
        } else if (o.name == "except") {
            if (auto s = context.count(o, 1, SIZE_MAX); !s) return s;
            auto zones = context.zones_of(o, o.args);
            if (!zones) return zones.error();
            f.except = std::move(*zones);
        } else if (ignored.contains(o.name)) {
            context.unsupported_option("forward", o);
        } else {
            return context.unknown_option("forward", o);
        }
    }
    server.forwards.push_back(std::move(f));
    return {};
}

}  // namespace sb::dns
