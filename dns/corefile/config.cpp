#include "dns/corefile/config.h"

#include "base/go_duration.h"
#include "base/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <tuple>

namespace sb::dns {

namespace {

using std::chrono::milliseconds;

// Every plugin of CoreDNS's plugin.cfg (core/dnsserver/zdirectives.go):
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
    };
    return names;
}

Error invalid(std::string why) {
    return make_error(ErrorCode::kInvalidArgument, std::move(why));
}

// An integer argument in [min, max] (every bound a caller passes fits 32 bits).
Result<uint32_t> parse_number(std::string_view text, int64_t min, int64_t max) {
    auto value = parse_integer(text, min, max);
    if (!value) return value.error();
    return static_cast<uint32_t>(*value);
}

// A Go duration (time.ParseDuration, which CoreDNS's plugins use), not
// negative, to the millisecond: "5s", "1m30s", "0.5s", "0".
Result<milliseconds> parse_duration(std::string_view text) {
    auto parsed = parse_go_duration(text);
    if (!parsed) {
        return invalid(escaped_for_message(text) + " is not a duration (e.g. 500ms, 5s, 1m30s)");
    }
    if (parsed->count() < 0) return invalid(escaped_for_message(text) + " is negative");
    return std::chrono::duration_cast<milliseconds>(*parsed);
}

// ADDR of prometheus, health and ready: [HOST]:PORT, HOST an IP address,
// "localhost" or empty (every address).
Result<HttpListen> parse_http_listen(std::string_view text) {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
        return invalid(escaped_for_message(text) + " is not an address (HOST:PORT or :PORT)");
    }
    std::string host(text.substr(0, colon));
    auto port = parse_number(text.substr(colon + 1), 1, 65535);
    if (!port) return invalid(escaped_for_message(text) + ": port " + port.error().message);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    if (!host.empty() && host != "localhost" && !IpAddress::parse(host)) {
        return invalid(escaped_for_message(text) + ": " + escaped_for_message(host) +
                       " is not an IP address or localhost");
    }
    return HttpListen{host, static_cast<uint16_t>(*port)};
}

class Mapper {
  public:
    explicit Mapper(std::string_view path) : path_(path) {}

    Result<CorefileConfig> map(const Corefile& corefile) {
        CorefileConfig config;
        // (zone, port, bind) -> line: CoreDNS refuses a zone served twice.
        std::map<std::tuple<std::string, uint16_t, std::vector<IpAddress>>, int> served;
        for (const auto& block : corefile.blocks) {
            auto server = map_block(block);
            if (!server) return server.error();
            for (const auto& zone : block.zones) {
                auto [it, fresh] =
                    served.emplace(std::make_tuple(zone.zone, zone.port, server->bind), zone.line);
                if (!fresh) {
                    return at(zone.line,
                              "zone " +
                                  escaped_for_message(zone.zone + ":" + std::to_string(zone.port)) +
                                  " is already served by the block at line " +
                                  std::to_string(it->second));
                }
            }
            config.servers.push_back(std::move(*server));
        }
        config.warnings = std::move(warnings_);
        return config;
    }

  private:
    Error at(int line, const std::string& why) const {
        return invalid(std::string(path_) + ":" + std::to_string(line) + ": " + why);
    }
    void warn(int line, const std::string& what) {
        warnings_.push_back(std::string(path_) + ":" + std::to_string(line) + ": " + what);
    }
    // A plugin's option CoreDNS has and switchboard does not: one warning.
    void unsupported_option(std::string_view plugin, const CorefileDirective& option) {
        warn(option.line, std::string(plugin) + " option " + escaped_for_message(option.name) +
                              " is not supported; ignored");
    }
    Status unknown_option(std::string_view plugin, const CorefileDirective& option) const {
        return at(option.line,
                  std::string(plugin) + ": unknown property " + escaped_for_message(option.name));
    }
    Status count(const CorefileDirective& directive, size_t min, size_t max) const {
        size_t n = directive.args.size();
        if (n >= min && n <= max) return {};
        std::string wanted = min == max        ? std::to_string(min)
                             : max == SIZE_MAX ? "at least " + std::to_string(min)
                                               : std::to_string(min) + "-" + std::to_string(max);
        return at(directive.line, directive.name + ": wrong argument count (" + std::to_string(n) +
                                      ", wants " + wanted + ")");
    }
    Status no_block(const CorefileDirective& directive) const {
        if (!directive.has_block) return {};
        return at(directive.line, directive.name + " takes no { } block");
    }
    template <typename T>
    Result<T> check(const CorefileDirective& directive, Result<T> value) const {
        if (!value) return at(directive.line, directive.name + ": " + value.error().message);
        return value;
    }
    Result<std::vector<std::string>> zones_of(const CorefileDirective& directive,
                                              std::span<const std::string> args) const {
        std::vector<std::string> zones;
        for (const auto& arg : args) {
            auto zone = check(directive, normalize_zone(arg));
            if (!zone) return zone.error();
            zones.push_back(zone->zone);
        }
        return zones;
    }
    Result<Fallthrough> fallthrough(const CorefileDirective& option) const {
        auto zones = zones_of(option, option.args);
        if (!zones) return zones.error();
        return Fallthrough{std::move(*zones)};
    }

    Result<ServerConfig> map_block(const CorefileServerBlock& block) {
        ServerConfig server;
        server.line = block.line;
        server.port = block.zones.front().port;
        for (const auto& zone : block.zones) {
            if (zone.port != server.port) {
                return at(zone.line, "the zones of a server block must share one port (" +
                                         std::to_string(server.port) + " and " +
                                         std::to_string(zone.port) + ")");
            }
            server.zones.push_back(zone.zone);
        }
        std::map<std::string, int> used;
        for (const auto& directive : block.directives) {
            const std::string& name = directive.name;
            if (!coredns_plugins().contains(name)) {
                return at(directive.line, "unknown directive " + escaped_for_message(name));
            }
            // As CoreDNS's setups: these refuse a second line (plugin.ErrOnce);
            // forward, log and bind read every line, and a plugin switchboard
            // only warns about is not checked (rewrite, template, ... take many).
            static const std::set<std::string_view> once_per_block = {
                "kubernetes", "cache", "hosts", "health",      "reload",
                "prometheus", "ready", "loop",  "loadbalance", "errors"};
            if (once_per_block.contains(name)) {
                auto [it, fresh] = used.emplace(name, directive.line);
                if (!fresh) {
                    return at(directive.line, name +
                                                  " can only be used once per server block "
                                                  "(also at line " +
                                                  std::to_string(it->second) + ")");
                }
            }
            if (auto status = map_directive(directive, server); !status) return status.error();
        }
        return server;
    }

    Status map_directive(const CorefileDirective& d, ServerConfig& server) {
        const std::string& name = d.name;
        if (name == "kubernetes") return kubernetes(d, server);
        if (name == "forward") return forward(d, server);
        if (name == "cache") return cache(d, server);
        if (name == "hosts") return hosts(d, server);
        if (name == "health") return health(d, server);
        if (name == "reload") return reload(d, server);
        if (name == "bind") return bind(d, server);
        if (name == "timeouts") return timeouts(d, server);
        if (name == "prometheus" || name == "ready") {
            if (auto s = count(d, 0, 1); !s) return s;
            if (auto s = no_block(d); !s) return s;
            HttpListen listen =
                name == "ready" ? HttpListen{"", 8181} : HttpListen{"localhost", 9153};
            if (!d.args.empty()) {
                auto parsed = check(d, parse_http_listen(d.args[0]));
                if (!parsed) return parsed.error();
                listen = *parsed;
            }
            (name == "ready" ? server.ready : server.prometheus) = listen;
            return {};
        }
        if (name == "loadbalance") {
            if (auto s = count(d, 0, 1); !s) return s;
            if (auto s = no_block(d); !s) return s;
            if (!d.args.empty() && d.args[0] != "round_robin") {
                return at(d.line, "loadbalance: policy " + escaped_for_message(d.args[0]) +
                                      " is not supported (round_robin only)");
            }
            server.loadbalance = true;
            return {};
        }
        if (name == "loop") {
            if (auto s = count(d, 0, 0); !s) return s;
            if (auto s = no_block(d); !s) return s;
            server.loop = true;
            return {};
        }
        if (name == "errors") {
            if (auto s = count(d, 0, 1); !s) return s;
            if (!d.args.empty() && d.args[0] != "stacktrace") {
                return at(d.line, "errors: unknown argument " + escaped_for_message(d.args[0]));
            }
            server.errors = true;
            return {};
        }
        if (name == "log") return log(d, server);
        if (name == "autopath") return autopath(d, server);
        if (warned_.insert(name).second) {
            warn(d.line, "plugin " + escaped_for_message(name) +
                             " is not supported; the server runs without it");
        }
        return {};
    }

    // `autopath [ZONE...] RESOLV-CONF`: only `autopath @kubernetes`, the
    // Pod's own search path, is served; a resolv.conf file or zones are
    // warned about and leave it off.
    Status autopath(const CorefileDirective& d, ServerConfig& server) {
        if (auto s = count(d, 1, SIZE_MAX); !s) return s;
        if (auto s = no_block(d); !s) return s;
        if (d.args.size() == 1 && d.args[0] == "@kubernetes") {
            server.autopath = true;
            return {};
        }
        warn(d.line, "autopath " + escaped_for_message(d.args.back()) +
                         (d.args.size() > 1 ? " with zones" : "") +
                         " is not supported (only `autopath @kubernetes`); the server runs "
                         "without it");
        return {};
    }

    Status kubernetes(const CorefileDirective& d, ServerConfig& server) {
        KubernetesConfig k;
        k.line = d.line;
        auto zones = zones_of(d, d.args);
        if (!zones) return zones.error();
        k.zones = zones->empty() ? server.zones : std::move(*zones);
        static const std::set<std::string_view> ignored = {"resyncperiod",
                                                           "endpoint",
                                                           "tls",
                                                           "namespaces",
                                                           "labels",
                                                           "namespace_labels",
                                                           "kubeconfig",
                                                           "ignore",
                                                           "multicluster",
                                                           "startup_timeout",
                                                           "upstream",
                                                           "apiserver_qps",
                                                           "apiserver_burst",
                                                           "apiserver_max_inflight"};
        for (const auto& o : d.block) {
            if (o.name == "pods") {
                if (auto s = count(o, 1, 1); !s) return s;
                const std::string& mode = o.args[0];
                if (mode == "disabled") {
                    k.pods = PodRecords::kDisabled;
                } else if (mode == "insecure") {
                    k.pods = PodRecords::kInsecure;
                } else if (mode == "verified") {
                    k.pods = PodRecords::kVerified;
                } else {
                    return at(o.line, "pods: " + escaped_for_message(mode) +
                                          " is not one of disabled, insecure, verified");
                }
            } else if (o.name == "fallthrough") {
                auto f = fallthrough(o);
                if (!f) return f.error();
                k.fallthrough = std::move(*f);
            } else if (o.name == "ttl") {
                if (auto s = count(o, 1, 1); !s) return s;
                auto ttl = check(o, parse_number(o.args[0], 0, 3600));
                if (!ttl) return ttl.error();
                k.ttl = *ttl;
            } else if (o.name == "endpoint_pod_names" || o.name == "noendpoints") {
                if (auto s = count(o, 0, 0); !s) return s;
                (o.name == "noendpoints" ? k.noendpoints : k.endpoint_pod_names) = true;
            } else if (ignored.contains(o.name)) {
                unsupported_option("kubernetes", o);
            } else {
                return unknown_option("kubernetes", o);
            }
        }
        server.kubernetes = std::move(k);
        return {};
    }

    Result<ForwardTarget> forward_target(const CorefileDirective& d, std::string_view text) const {
        if (text.starts_with("tls://")) {
            return at(d.line, "forward: " + escaped_for_message(text) +
                                  ": DNS over TLS upstreams are not supported; use a plain "
                                  "address");
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
        return at(d.line,
                  "forward: " + escaped_for_message(text) + " is not an IP address or a file");
    }

    Status forward(const CorefileDirective& d, ServerConfig& server) {
        if (auto s = count(d, 2, 16); !s) return s;
        ForwardConfig f;
        f.line = d.line;
        auto from = check(d, normalize_zone(d.args[0]));
        if (!from) return from.error();
        f.from = from->zone;
        for (const auto& other : server.forwards) {
            if (other.from == f.from) {
                return at(d.line, "forward " + escaped_for_message(f.from) +
                                      " is already defined at line " + std::to_string(other.line));
            }
        }
        for (size_t i = 1; i < d.args.size(); ++i) {
            auto target = forward_target(d, d.args[i]);
            if (!target) return target.error();
            f.to.push_back(std::move(*target));
        }
        static const std::set<std::string_view> ignored = {
            "tls",    "tls_servername", "max_fails",
            "expire", "next",           "failfast_all_unhealthy_upstreams"};
        for (const auto& o : d.block) {
            if (o.name == "max_concurrent") {
                if (auto s = count(o, 1, 1); !s) return s;
                auto n = check(o, parse_number(o.args[0], 0, INT32_MAX));
                if (!n) return n.error();
                f.max_concurrent = *n;
            } else if (o.name == "policy") {
                if (auto s = count(o, 1, 1); !s) return s;
                const std::string& p = o.args[0];
                if (p == "random") {
                    f.policy = ForwardPolicy::kRandom;
                } else if (p == "round_robin") {
                    f.policy = ForwardPolicy::kRoundRobin;
                } else if (p == "sequential") {
                    f.policy = ForwardPolicy::kSequential;
                } else {
                    return at(o.line, "policy: " + escaped_for_message(p) +
                                          " is not one of random, round_robin, sequential");
                }
            } else if (o.name == "health_check") {
                if (auto s = count(o, 1, 4); !s) return s;
                auto interval = check(o, parse_duration(o.args[0]));
                if (!interval) return interval.error();
                f.health_check = *interval;
            } else if (o.name == "force_tcp" || o.name == "prefer_udp") {
                if (auto s = count(o, 0, 0); !s) return s;
                (o.name == "force_tcp" ? f.force_tcp : f.prefer_udp) = true;
            } else if (o.name == "except") {
                if (auto s = count(o, 1, SIZE_MAX); !s) return s;
                auto zones = zones_of(o, o.args);
                if (!zones) return zones.error();
                f.except = std::move(*zones);
            } else if (ignored.contains(o.name)) {
                unsupported_option("forward", o);
            } else {
                return unknown_option("forward", o);
            }
        }
        server.forwards.push_back(std::move(f));
        return {};
    }

    // success|denial CAPACITY [TTL [MINTTL]]
    Status cache_kind(const CorefileDirective& o, uint32_t& capacity, std::optional<uint32_t>& ttl,
                      std::optional<uint32_t>& min_ttl) const {
        if (auto s = count(o, 1, 3); !s) return s;
        auto c = check(o, parse_number(o.args[0], 0, INT32_MAX));
        if (!c) return c.error();
        capacity = *c;
        if (o.args.size() > 1) {
            auto t = check(o, parse_number(o.args[1], 1, INT32_MAX));
            if (!t) return t.error();
            ttl = *t;
        }
        if (o.args.size() > 2) {
            auto m = check(o, parse_number(o.args[2], 0, INT32_MAX));
            if (!m) return m.error();
            min_ttl = *m;
        }
        return {};
    }

    Status cache(const CorefileDirective& d, ServerConfig& server) {
        CacheConfig c;
        c.line = d.line;
        std::span<const std::string> rest(d.args);
        // As CoreDNS: a first argument that is an integer is the TTL,
        // anything else (10.0.0.0/8 included) is a zone.
        bool integer = !rest.empty() && !rest[0].empty() &&
                       rest[0].find_first_not_of("-0123456789") == std::string::npos;
        if (integer) {
            auto ttl = check(d, parse_number(rest[0], 1, INT32_MAX));
            if (!ttl) return ttl.error();
            c.max_ttl = *ttl;
            rest = rest.subspan(1);
        }
        auto zones = zones_of(d, rest);
        if (!zones) return zones.error();
        c.zones = std::move(*zones);
        for (const auto& o : d.block) {
            if (o.name == "success") {
                if (auto s = cache_kind(o, c.success_capacity, c.success_ttl, c.success_min_ttl);
                    !s)
                    return s;
            } else if (o.name == "denial") {
                if (auto s = cache_kind(o, c.denial_capacity, c.denial_ttl, c.denial_min_ttl); !s)
                    return s;
            } else if (o.name == "serve_stale") {
                if (auto s = count(o, 0, 2); !s) return s;
                milliseconds stale = std::chrono::hours(1);
                if (!o.args.empty()) {
                    auto parsed = check(o, parse_duration(o.args[0]));
                    if (!parsed) return parsed.error();
                    stale = *parsed;
                }
                if (o.args.size() > 1 && o.args[1] != "immediate" && o.args[1] != "verify") {
                    return at(o.line, "serve_stale: " + escaped_for_message(o.args[1]) +
                                          " is not one of immediate, verify");
                }
                c.serve_stale = stale;
                c.serve_stale_verify = o.args.size() > 1 && o.args[1] == "verify";
            } else if (o.name == "disable") {
                if (auto s = count(o, 1, SIZE_MAX); !s) return s;
                if (o.args[0] != "success" && o.args[0] != "denial") {
                    return at(o.line, "disable: " + escaped_for_message(o.args[0]) +
                                          " is not one of success, denial");
                }
                auto disabled = zones_of(o, std::span<const std::string>(o.args).subspan(1));
                if (!disabled) return disabled.error();
                (o.args[0] == "success" ? c.disable_success : c.disable_denial) =
                    std::move(*disabled);
            } else if (o.name == "prefetch" || o.name == "servfail" || o.name == "keepttl") {
                unsupported_option("cache", o);
            } else {
                return unknown_option("cache", o);
            }
        }
        server.cache = std::move(c);
        return {};
    }

    Status hosts(const CorefileDirective& d, ServerConfig& server) {
        HostsConfig h;
        h.line = d.line;
        if (!d.args.empty()) {
            h.file = d.args[0];
            auto zones = zones_of(d, std::span<const std::string>(d.args).subspan(1));
            if (!zones) return zones.error();
            h.zones = std::move(*zones);
        }
        for (const auto& o : d.block) {
            if (o.name == "ttl") {
                if (auto s = count(o, 1, 1); !s) return s;
                auto ttl = check(o, parse_number(o.args[0], 0, 65535));
                if (!ttl) return ttl.error();
                h.ttl = *ttl;
            } else if (o.name == "no_reverse") {
                if (auto s = count(o, 0, 0); !s) return s;
                h.no_reverse = true;
            } else if (o.name == "reload") {
                if (auto s = count(o, 1, 1); !s) return s;
                auto interval = check(o, parse_duration(o.args[0]));
                if (!interval) return interval.error();
                h.reload = *interval;
            } else if (o.name == "fallthrough") {
                auto f = fallthrough(o);
                if (!f) return f.error();
                h.fallthrough = std::move(*f);
            } else if (auto address = IpAddress::parse(o.name)) {
                if (o.args.empty())
                    return at(o.line, "hosts: " + escaped_for_message(o.name) + " has no name");
                HostsEntry entry{*address, {}};
                for (const auto& arg : o.args) {
                    auto name = normalize_zone(arg);
                    if (!name || name->port) {
                        return at(o.line,
                                  "hosts: " + escaped_for_message(arg) + " is not a host name");
                    }
                    entry.names.push_back(name->zone);
                }
                h.inline_entries.push_back(std::move(entry));
            } else {
                return at(o.line, "hosts: " + escaped_for_message(o.name) +
                                      " is neither an option nor an IP address");
            }
        }
        server.hosts = std::move(h);
        return {};
    }

    Status health(const CorefileDirective& d, ServerConfig& server) {
        if (auto s = count(d, 0, 1); !s) return s;
        HealthConfig h;
        h.line = d.line;
        if (!d.args.empty()) {
            auto listen = check(d, parse_http_listen(d.args[0]));
            if (!listen) return listen.error();
            h.listen = *listen;
        }
        for (const auto& o : d.block) {
            if (o.name != "lameduck") return unknown_option("health", o);
            if (auto s = count(o, 1, 1); !s) return s;
            auto lameduck = check(o, parse_duration(o.args[0]));
            if (!lameduck) return lameduck.error();
            h.lameduck = *lameduck;
        }
        server.health = h;
        return {};
    }

    // CoreDNS's log setup: no argument logs every name; one is a name; more
    // are names, the last one the format when it has a `{`.
    Status log(const CorefileDirective& d, ServerConfig& server) {
        std::vector<std::string> names = d.args;
        std::string format(kCommonLogFormat);
        if (names.size() > 1 && names.back().find('{') != std::string::npos) {
            format = names.back();
            names.pop_back();
        }
        if (names.empty()) names.emplace_back(".");
        uint8_t classes = 0;
        std::chrono::milliseconds min_duration{0};
        for (const auto& o : d.block) {
            if (o.name == "minDuration") {
                if (auto s = count(o, 0, 1); !s) return s;
                min_duration = std::chrono::milliseconds(100);  // CoreDNS's default
                if (!o.args.empty()) {
                    auto parsed = check(o, parse_duration(o.args[0]));
                    if (!parsed) return parsed.error();
                    min_duration = *parsed;
                }
                continue;
            }
            if (o.name != "class") return unknown_option("log", o);
            if (auto s = count(o, 1, SIZE_MAX); !s) return s;
            for (const auto& arg : o.args) {
                if (arg == "all") {
                    classes |= kClassAll;
                } else if (arg == "success") {
                    classes |= kClassSuccess;
                } else if (arg == "denial") {
                    classes |= kClassDenial;
                } else if (arg == "error") {
                    classes |= kClassError;
                } else {
                    return at(o.line, "class: " + escaped_for_message(arg) +
                                          " is not one of all, success, denial, error");
                }
            }
        }
        if (classes == 0) classes = kClassAll;
        auto zones = zones_of(d, names);
        if (!zones) return zones.error();
        for (auto& zone : *zones) {
            server.log.push_back(LogConfig{std::move(zone), format, classes, min_duration, d.line});
        }
        return {};
    }

    Status reload(const CorefileDirective& d, ServerConfig& server) {
        if (auto s = count(d, 0, 2); !s) return s;
        if (auto s = no_block(d); !s) return s;
        ReloadConfig r;
        r.line = d.line;
        if (!d.args.empty()) {
            auto interval = check(d, parse_duration(d.args[0]));
            if (!interval) return interval.error();
            r.interval = *interval;
            // CoreDNS's default jitter is half the default interval; with an
            // interval given it stays 15s unless that breaks the rule below.
            r.jitter = std::min(r.jitter, r.interval / 2);
        }
        if (d.args.size() > 1) {
            auto jitter = check(d, parse_duration(d.args[1]));
            if (!jitter) return jitter.error();
            r.jitter = *jitter;
        }
        if (r.interval < std::chrono::seconds(2)) {
            return at(d.line, "reload: interval must be at least 2s");
        }
        if (r.jitter < std::chrono::seconds(1)) {
            return at(d.line, "reload: jitter must be at least 1s");
        }
        // CoreDNS: a jitter over half the interval is set to half of it.
        r.jitter = std::min(r.jitter, r.interval / 2);
        server.reload = r;
        return {};
    }

    // CoreDNS's plugin/timeouts: a block of `read|write|idle DURATION` and
    // `maxtcpqueries N`, at least one; a later `timeouts` adds to the first.
    Status timeouts(const CorefileDirective& d, ServerConfig& server) {
        if (auto s = count(d, 0, 0); !s) return s;
        TimeoutsConfig t = server.timeouts.value_or(TimeoutsConfig{});
        t.line = d.line;
        for (const auto& o : d.block) {
            if (auto s = count(o, 1, 1); !s) return s;
            if (o.name == "maxtcpqueries") {
                // -1 (unlimited) or positive; parse_number's uint32 holds -1 as 2^32-1.
                auto n = check(o, parse_number(o.args[0], -1, INT32_MAX));
                if (!n) return n.error();
                if (*n == 0) {
                    return at(o.line, "timeouts: maxtcpqueries must be -1 (unlimited) or positive");
                }
                warn(o.line,
                     "timeouts: maxtcpqueries is not supported; a TCP connection serves "
                     "any number of queries");
                continue;
            }
            if (o.name != "read" && o.name != "write" && o.name != "idle") {
                return at(o.line, "timeouts: unknown option " + escaped_for_message(o.name));
            }
            auto value = check(o, parse_duration(o.args[0]));
            if (!value) return value.error();
            if (*value < std::chrono::seconds(1) || *value > std::chrono::hours(24)) {
                return at(o.line, "timeouts: " + o.name + " must be between 1s and 24h");
            }
            if (o.name == "write") {
                warn(o.line,
                     "timeouts: write is not supported; a client that stops reading is "
                     "closed by the idle timeout");
                continue;
            }
            (o.name == "read" ? t.read : t.idle) = *value;
        }
        if (d.block.empty()) return at(d.line, "timeouts: a timeouts block with no timeouts");
        server.timeouts = t;
        return {};
    }

    Status bind(const CorefileDirective& d, ServerConfig& server) {
        if (auto s = count(d, 1, SIZE_MAX); !s) return s;
        if (auto s = no_block(d); !s) return s;
        for (const auto& arg : d.args) {
            auto address = IpAddress::parse(arg);
            if (!address) {
                return at(d.line, "bind: " + escaped_for_message(arg) +
                                      " is not an IP address (interface names are not supported)");
            }
            server.bind.push_back(*address);
        }
        return {};
    }

    std::string_view path_;
    std::vector<std::string> warnings_;
    std::set<std::string> warned_;
};

}  // namespace

Result<CorefileConfig> map_corefile(const Corefile& corefile, std::string_view path) {
    return Mapper(path).map(corefile);
}

std::vector<std::string> wire_zones(const std::vector<std::string>& zones) {
    std::vector<std::string> wire;
    for (const auto& zone : zones) {
        if (auto name = name_from_text(zone)) wire.push_back(name_lower(*name));
    }
    return wire;
}

}  // namespace sb::dns
