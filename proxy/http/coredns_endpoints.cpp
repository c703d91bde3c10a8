#include "proxy/http/coredns_endpoints.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/log.h"

namespace sb::proxy {

namespace {

void add_once(std::vector<dns::HttpListen>& listens, const dns::HttpListen& listen) {
    if (std::find(listens.begin(), listens.end(), listen) == listens.end()) {
        listens.push_back(listen);
    }
}

HttpResponse text(unsigned status, std::string body) {
    return HttpResponse{status, "text/plain; charset=utf-8", std::move(body), {}};
}

}  // namespace

CorednsEndpointsConfig coredns_endpoints_config(const dns::CorefileConfig& corefile) {
    CorednsEndpointsConfig config;
    for (const auto& server : corefile.servers) {
        if (server.prometheus) add_once(config.prometheus, *server.prometheus);
        if (server.ready) add_once(config.ready, *server.ready);
        if (server.health) {
            add_once(config.health, server.health->listen);
            config.lameduck = std::max(config.lameduck, server.health->lameduck);
        }
    }
    return config;
}

HostPort bind_address(const dns::HttpListen& listen, bool kernel_has_ipv6) {
    const char* host = listen.host.c_str();
    if (listen.host.empty()) host = kernel_has_ipv6 ? "::" : "0.0.0.0";
    if (listen.host == "localhost") host = "127.0.0.1";
    // map_corefile admitted only IP addresses, "localhost" and "".
    return HostPort{*IpAddress::parse(host), listen.port};
}

void write_coredns_build_info(metrics::TextWriter& out, const BuildInfo& build) {
    out.family({"coredns_build_info",
                "A metric with a constant '1' value labeled by version, revision, and goversion "
                "from which CoreDNS was built.",
                metrics::Type::kGauge,
                {"version", "revision", "goversion"}});
    out.sample({build.version, "", build.compiler + " " + build.compiler_version}, uint64_t{1});
}

CorednsEndpoints::CorednsEndpoints(HttpServer& http, CorednsEndpointsConfig config, Probes probes)
    : http_(http), config_(std::move(config)), probes_(std::move(probes)) {
    const bool has_ipv6 = std::filesystem::exists("/proc/net/if_inet6");
    // One listener per address, however many plugins name it.
    std::map<HostPort, std::pair<HttpRoutes, std::vector<std::string>>> by_address;
    auto add = [&](const std::vector<dns::HttpListen>& listens, const std::string& path,
                   HttpHandler handler) {
        for (const auto& listen : listens) {
            auto& [routes, paths] = by_address[bind_address(listen, has_ipv6)];
            routes[path] = handler;
            paths.push_back(path);
        }
    };
    add(config_.prometheus, "/metrics", [this] { return metrics(); });
    add(config_.health, "/health", [this] { return health(); });
    add(config_.ready, "/ready", [this] { return ready(); });
    for (auto& [address, served] : by_address) {
        const std::string where = address.to_string();
        int id = http_.listen_retrying(
            address, std::move(served.first), kCorednsBindRetryPeriod,
            [where](const Error& error, unsigned attempt) {
                if (attempt == 1) {
                    log::warn("--dns-corefile: HTTP listener {}: {}; retrying every {}s", where,
                              error.describe(), kCorednsBindRetryPeriod.count() / 1000);
                } else {
                    log::debug("--dns-corefile: HTTP listener {}: attempt {}: {}", where, attempt,
                               error.describe());
                }
            },
            [where](unsigned failures) {
                log::info("--dns-corefile: HTTP listener {} bound after {} failed attempts", where,
                          failures);
            });
        listeners_.push_back(Listener{id, std::move(served.second)});
    }
}

CorednsEndpoints::~CorednsEndpoints() {
    close();
}

void CorednsEndpoints::close() {
    for (const auto& listener : listeners_) http_.close(listener.id);
    listeners_.clear();
}

HttpResponse CorednsEndpoints::ready() const {
    std::vector<std::string> not_ready;
    if (!probes_.dns_serving()) not_ready.emplace_back("dns");
    if (!probes_.store_synced()) not_ready.emplace_back("kubernetes");
    if (not_ready.empty()) return text(200, "OK");
    return text(503, fmt::format("{}", fmt::join(not_ready, ",")));
}

HttpResponse CorednsEndpoints::health() const {
    return text(200, "OK");
}

HttpResponse CorednsEndpoints::metrics() const {
    return HttpResponse{
        200, "text/plain; version=0.0.4; charset=utf-8", probes_.metrics_text(), {}};
}

void CorednsEndpoints::lameduck(const std::function<bool()>& cut_short) const {
    if (config_.lameduck.count() == 0) return;
    log::info("going into lameduck mode for {}ms: DNS and /health keep serving",
              config_.lameduck.count());
    const auto end = std::chrono::steady_clock::now() + config_.lameduck;
    constexpr auto kLook = std::chrono::milliseconds(20);
    while (!cut_short()) {
        const auto now = std::chrono::steady_clock::now();
        if (now >= end) return;
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(kLook, end - now));
    }
}

uint16_t CorednsEndpoints::port(const std::string& path) const {
    for (const auto& listener : listeners_) {
        if (std::find(listener.paths.begin(), listener.paths.end(), path) != listener.paths.end()) {
            return http_.port(listener.id);
        }
    }
    return 0;
}

}  // namespace sb::proxy
