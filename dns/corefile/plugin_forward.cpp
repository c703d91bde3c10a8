// CoreDNS's plugin/forward/setup.go (1.12 to 1.14): each `forward FROM
// TO...` block as a ForwardConfig (targets, policy, health checks,
// protocol, except, TLS, failover, timeouts). docs/corefile.md#forward.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "dns/corefile/plugins.h"
#include "dns/search_path/resolv_conf.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

constexpr uint16_t kTlsPort = 853;  // RFC 7858

// A resolv.conf named by forward (CoreDNS: anything that is not an IP
// address is a file): read now, as CoreDNS reads it at setup. Its
// nameservers; none is not an error here (map_forward refuses a forward
// that has no address at all, as CoreDNS does).
Result<std::vector<HostPort>> read_resolv_conf(const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "r");
    if (file == nullptr) {
        return invalid_argument(fmt::format("not an IP address or file {}: {}",
                                            escaped_for_message(path), std::strerror(errno)));
    }
    std::string text;
    char buffer[4096];
    size_t n = 0;
    // resolv.conf is small; the bound keeps a wrong name (a device) cheap.
    while (text.size() < (1u << 20) && (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0) {
        text.append(buffer, n);
    }
    std::fclose(file);
    return parse_resolv_conf_nameservers(text);
}

// CoreDNS's splitZone for a tls:// upstream: "ADDRESS%NAME[:PORT]" or
// "[ADDRESS%NAME]:PORT" is ADDRESS[:PORT] with its own TLS server name.
void split_server_name(std::string_view text, std::string& host, std::string& server_name) {
    const size_t percent = text.rfind('%');
    if (percent == std::string_view::npos) return;
    host = std::string(text.substr(0, percent));
    if (host.starts_with("[")) host += "]";
    std::string_view name = text.substr(percent + 1);
    if (const size_t colon = name.rfind(':'); colon != std::string_view::npos) {
        host += name.substr(colon);
        name = name.substr(0, colon);
        if (name.ends_with("]")) name.remove_suffix(1);
    }
    server_name = std::string(name);
}

Result<ForwardTarget> forward_target(const CorefileDirective& d, std::string_view text,
                                     const MapContext& context, size_t& addresses) {
    const bool tls = text.starts_with("tls://");
    // CoreDNS's forward takes dns:// and tls:// only ("'https' is not
    // supported as a destination protocol"); any other scheme would
    // otherwise pass below for a file name, and every query would fail.
    if (auto transport = transport_other_than_dns(text); transport && !tls) {
        return context.at(d.line,
                          fmt::format("forward: {}: {}:// upstreams are not supported "
                                      "(forward takes dns://, tls:// and plain addresses)",
                                      escaped_for_message(text), escaped_for_message(*transport)));
    }
    std::string_view plain = tls ? text.substr(6) : text;
    if (plain.starts_with("dns://")) plain = plain.substr(6);
    std::string server_name;
    std::string host(plain);
    if (tls) split_server_name(plain, host, server_name);
    plain = host;
    const uint16_t port = tls ? kTlsPort : 53;
    auto address = parse_host_port(plain, port);
    if (!address && !plain.empty() && plain.front() != '[') {
        // A bare IPv6 address has colons but no brackets.
        if (auto v6 = IpAddress::parse(plain)) address = HostPort{*v6, port};
    }
    if (address) {
        ++addresses;
        return ForwardTarget{*address, "", tls, server_name};
    }
    if (plain != text) {
        return context.at(d.line, fmt::format("forward: {} is not an IP address (a file is "
                                              "named without a scheme)",
                                              escaped_for_message(text)));
    }
    auto nameservers = context.check(d, read_resolv_conf(std::string(plain)));
    if (!nameservers) return nameservers.error();
    addresses += nameservers->size();
    return ForwardTarget{std::nullopt, std::string(plain), false, ""};
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

// miekg/dns's StringToRcode, which `next` and `failover` read
// (case-insensitively; NOTIMPL is NOTIMP's other spelling).
std::optional<uint8_t> rcode_named(std::string_view text) {
    static constexpr std::array<std::pair<std::string_view, uint8_t>, 21> kNames = {{
        {"NOERROR", 0},    {"FORMERR", 1},  {"SERVFAIL", 2}, {"NXDOMAIN", 3}, {"NOTIMP", 4},
        {"NOTIMPL", 4},    {"REFUSED", 5},  {"YXDOMAIN", 6}, {"YXRRSET", 7},  {"NXRRSET", 8},
        {"NOTAUTH", 9},    {"NOTZONE", 10}, {"BADSIG", 16},  {"BADVERS", 16}, {"BADKEY", 17},
        {"BADTIME", 18},   {"BADMODE", 19}, {"BADNAME", 20}, {"BADALG", 21},  {"BADTRUNC", 22},
        {"BADCOOKIE", 23},
    }};
    std::string upper(text);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const auto& [name, code] : kNames) {
        if (name == upper) return code;
    }
    return std::nullopt;
}

Result<std::vector<uint8_t>> rcodes(const CorefileDirective& o, const MapContext& context) {
    if (auto s = context.count(o, 1, SIZE_MAX); !s) return s.error();
    std::vector<uint8_t> codes;
    for (const auto& arg : o.args) {
        auto code = rcode_named(arg);
        if (!code) {
            return context.at(o.line, fmt::format("{}: {} is not a valid rcode", o.name,
                                                  escaped_for_message(arg)));
        }
        if (*code == 0 && o.name == "failover") {
            return context.at(o.line, "failover: NoError cannot be used in failover");
        }
        codes.push_back(*code);
    }
    return codes;
}

// A Go duration with one argument; `positive`: 0 refused too (read_timeout).
Result<std::chrono::milliseconds> duration_option(const CorefileDirective& o,
                                                  const MapContext& context, bool positive) {
    if (auto s = context.count(o, 1, 1); !s) return s.error();
    auto duration = context.check(o, parse_duration(o.args[0]));
    if (duration && positive && duration->count() == 0) {
        return context.at(o.line, fmt::format("{} must be positive", o.name));
    }
    return duration;
}

// What a block's options leave for map_forward to finish: the `tls`
// arguments, `tls_servername`, and the pool options' values.
struct PendingTls {
    std::optional<std::vector<std::string>> files;  // `tls` given
    int line = 0;                                   // of `tls`
    std::string server_name;
    std::chrono::milliseconds expire{10000};  // CoreDNS's default
    std::chrono::milliseconds max_age{0};
};

// The options CoreDNS has only to tune its connection pool; switchboard
// has none (one connection per TCP/TLS exchange, one socket per UDP
// attempt), so none can change an answer: checked and warned about.
Status pool_option(const CorefileDirective& o, PendingTls& pending, MapContext& context) {
    if (o.name == "max_idle_conns") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        if (auto n = context.check(o, parse_number(o.args[0], 0, INT32_MAX)); !n) return n.error();
    } else if (o.name == "doh_method") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        if (o.args[0] != "GET" && o.args[0] != "POST") {
            return context.at(o.line, "doh_method must be either GET or POST");
        }
    } else if (o.name == "resolver") {
        // It resolves host names among the TOs, which switchboard refuses.
        if (auto s = context.count(o, 1, SIZE_MAX); !s) return s;
        for (const auto& arg : o.args) {
            if (!parse_host_port(arg, 53) && !IpAddress::parse(arg)) {
                return context.at(o.line, fmt::format("resolver must be an IP address or "
                                                      "IP:port: {}",
                                                      escaped_for_message(arg)));
            }
        }
    } else {
        auto duration = duration_option(o, context, false);
        if (!duration) return duration.error();
        (o.name == "expire" ? pending.expire : pending.max_age) = *duration;
    }
    context.warn(o.line, fmt::format("forward option {} does not change an answer here "
                                     "(switchboard keeps no connection pool); ignored",
                                     o.name));
    return {};
}

Status map_forward_option(const CorefileDirective& o, ForwardConfig& f, PendingTls& pending,
                          MapContext& context) {
    if (o.name == "max_concurrent") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        auto n = context.check(o, parse_number(o.args[0], 0, INT32_MAX));
        if (!n) return n.error();
        f.max_concurrent = *n;
    } else if (o.name == "max_fails" || o.name == "max_connect_attempts") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        auto n = context.check(o, parse_number(o.args[0], 0, UINT32_MAX));
        if (!n) return n.error();
        if (o.name == "max_fails") {
            f.max_fails = *n;
        } else {
            f.max_connect_attempts = *n;
        }
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
    } else if (o.name == "force_tcp" || o.name == "prefer_udp" ||
               o.name == "failfast_all_unhealthy_upstreams" || o.name == "next_on_nodata") {
        if (auto s = context.count(o, 0, 0); !s) return s;
        (o.name == "force_tcp"        ? f.force_tcp
         : o.name == "prefer_udp"     ? f.prefer_udp
         : o.name == "next_on_nodata" ? f.hands_on
                                      : f.failfast_all_unhealthy_upstreams) = true;
    } else if (o.name == "except") {
        if (auto s = context.count(o, 1, SIZE_MAX); !s) return s;
        auto zones = context.zones_of(o, o.args);
        if (!zones) return zones.error();
        f.except = std::move(*zones);
    } else if (o.name == "failover" || o.name == "next") {
        auto codes = rcodes(o, context);
        if (!codes) return codes.error();
        if (o.name == "failover") f.failover = std::move(*codes);
        if (o.name == "next") f.hands_on = true;
    } else if (o.name == "read_timeout") {
        auto timeout = duration_option(o, context, true);
        if (!timeout) return timeout.error();
        f.read_timeout = *timeout;
    } else if (o.name == "source_address") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        std::string_view text = o.args[0];
        // Go's net.IP holds ::ffff:A.B.C.D as the IPv4 address A.B.C.D, and
        // CoreDNS's dialer binds an IPv4 socket to it.
        if (text.starts_with("::ffff:") && IpAddress::parse(text.substr(7))) text = text.substr(7);
        auto address = IpAddress::parse(text);
        if (!address) {
            return context.at(
                o.line, fmt::format("invalid IP address: {}", escaped_for_message(o.args[0])));
        }
        f.source_address = *address;
    } else if (o.name == "tls") {
        if (auto s = context.count(o, 0, 3); !s) return s;
        pending.files = o.args;
        pending.line = o.line;
    } else if (o.name == "tls_servername") {
        if (auto s = context.count(o, 1, 1); !s) return s;
        pending.server_name = o.args[0];
    } else if (o.name == "expire" || o.name == "max_age" || o.name == "max_idle_conns" ||
               o.name == "doh_method" || o.name == "resolver") {
        return pool_option(o, pending, context);
    } else {
        return context.unknown_option("forward", o);
    }
    return {};
}

// `tls`'s files as CoreDNS's pkg/tls reads them: CA; CERT KEY; CERT KEY CA.
TlsFiles tls_files(const std::vector<std::string>& args) {
    TlsFiles files;
    if (args.size() == 1) files.ca = args[0];
    if (args.size() >= 2) {
        files.cert = args[0];
        files.key = args[1];
    }
    if (args.size() == 3) files.ca = args[2];
    return files;
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
    if (!server.forwards.empty() && server.forwards.back().hands_on) {
        return context.at(server.forwards.back().line,
                          fmt::format("forward: next and next_on_nodata hand a reply on to the "
                                      "next forward (line {}); switchboard does not chain "
                                      "forwards",
                                      d.line));
    }
    size_t addresses = 0;
    for (size_t i = 1; i < d.args.size(); ++i) {
        auto target = forward_target(d, d.args[i], context, addresses);
        if (!target) return target.error();
        f.to.push_back(std::move(*target));
    }
    if (addresses == 0) return context.at(d.line, "forward: no nameservers found");
    PendingTls pending;
    for (const auto& o : d.block) {
        if (auto s = map_forward_option(o, f, pending, context); !s) return s;
    }
    if (pending.max_age.count() > 0 && pending.max_age < pending.expire) {
        return context.at(d.line, fmt::format("forward: max_age ({}ms) must not be less than "
                                              "expire ({}ms)",
                                              pending.max_age.count(), pending.expire.count()));
    }
    if (f.hands_on) {
        context.warn(d.line,
                     "forward: next/next_on_nodata: no forward follows in this block; "
                     "ignored");
    }
    const bool tls = std::any_of(f.to.begin(), f.to.end(), [](const auto& t) { return t.tls; });
    for (const auto& target : f.to) {
        if (!target.tls_servername.empty() && !pending.server_name.empty()) {
            return context.at(d.line, fmt::format("forward: both forward ({}) and proxy level "
                                                  "({}) TLS servernames are set for upstream "
                                                  "tls://{}",
                                                  escaped_for_message(pending.server_name),
                                                  escaped_for_message(target.tls_servername),
                                                  target.address->to_string()));
        }
    }
    if (tls || pending.files) {
        auto client = TlsClient::load(tls_files(pending.files.value_or(std::vector<std::string>{})),
                                      pending.server_name);
        if (!client) {
            return context.at(pending.files ? pending.line : d.line,
                              fmt::format("forward: tls: {}", client.error().describe()));
        }
        if (tls) f.tls = std::move(*client);
    }
    server.forwards.push_back(std::move(f));
    return {};
}

}  // namespace sb::dns
