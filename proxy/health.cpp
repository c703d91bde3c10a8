#include "proxy/health.h"

#include <fmt/format.h>

#include <ctime>
#include <set>

#include "base/log.h"

namespace sb::proxy {

void ProxierHealth::queued(time_point now) {
    std::lock_guard lock(mutex_);
    if (!oldest_queued_) oldest_queued_ = now;
}

void ProxierHealth::updated(time_point now) {
    std::lock_guard lock(mutex_);
    last_updated_ = now;
    oldest_queued_.reset();
}

ProxierHealth::Report ProxierHealth::check(time_point now) const {
    std::lock_guard lock(mutex_);
    Report report;
    report.current_time = now;
    report.last_updated = last_updated_;
    report.healthy = !oldest_queued_ || now - *oldest_queued_ <= timeout_;
    return report;
}

HttpResponse ProxierHealth::healthz_response(time_point now) const {
    Report report = check(now);
    HttpResponse response;
    response.status = report.healthy ? 200 : 503;
    response.content_type = "application/json";
    // kube-proxy's exact body (its spacing included); the node is always
    // eligible here: switchboard does not watch node deletion taints.
    response.body =
        fmt::format(R"({{"lastUpdated": "{}","currentTime": "{}", "nodeEligible": true}})",
                    format_go_time(report.last_updated), format_go_time(report.current_time));
    return response;
}

std::string format_go_time(std::chrono::system_clock::time_point time) {
    const auto since_epoch = time.time_since_epoch();
    const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
    const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - seconds);
    std::time_t whole = static_cast<std::time_t>(seconds.count());
    std::tm utc{};
    gmtime_r(&whole, &utc);
    char text[64];
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &utc);
    std::string result = text;
    if (nanos.count() > 0) {
        // Go prints the fraction with trailing zeros removed.
        std::string fraction = fmt::format("{:09d}", nanos.count());
        while (fraction.back() == '0') fraction.pop_back();
        result += "." + fraction;
    }
    return result + " +0000 UTC";
}

std::map<uint16_t, HealthCheckState> health_checks_of(const rules::Plan& plan) {
    std::map<uint16_t, HealthCheckState> checks;
    std::map<uint16_t, std::set<IpAddress>> local_ips;
    for (const auto& port : plan.services) {
        if (port.external_traffic_policy != rules::TrafficPolicy::kLocal ||
            port.health_check_node_port == 0) {
            continue;
        }
        auto [it, inserted] = checks.try_emplace(port.health_check_node_port);
        if (inserted) {
            it->second.ns = port.ns;
            it->second.name = port.service;
        } else if (it->second.ns != port.ns || it->second.name != port.service) {
            // The API server allocates health-check node ports uniquely; a
            // clash means bad input: the first Service (in plan order) wins.
            continue;
        }
        auto& ips = local_ips[port.health_check_node_port];
        // kube-proxy counts distinct IPs of local endpoints that are ready.
        for (const auto& endpoint : port.local_endpoints) {
            if (endpoint.ready) ips.insert(endpoint.ip);
        }
    }
    for (auto& [port, state] : checks) state.local_endpoints = local_ips[port].size();
    return checks;
}

namespace {

std::string json_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        if (c == '"' || c == '\\') out.push_back('\\');
        if (static_cast<unsigned char>(c) < 0x20) continue;
        out.push_back(c);
    }
    return out;
}

}  // namespace

HttpResponse health_check_response(const HealthCheckState& state, bool proxy_healthy) {
    HttpResponse response;
    response.status = state.local_endpoints > 0 && proxy_healthy ? 200 : 503;
    response.content_type = "application/json";
    response.headers.emplace_back("X-Load-Balancing-Endpoint-Weight",
                                  std::to_string(state.local_endpoints));
    response.body = fmt::format(
        R"({{"service":{{"namespace":"{}","name":"{}"}},"localEndpoints":{},"serviceProxyHealthy":{}}})",
        json_escape(state.ns), json_escape(state.name), state.local_endpoints,
        proxy_healthy ? "true" : "false");
    return response;
}

HealthCheckPorts::HealthCheckPorts(HttpServer& server, IpAddress listen_address,
                                   HealthyFunction proxy_healthy)
    : server_(server), listen_address_(listen_address), proxy_healthy_(std::move(proxy_healthy)) {}

HealthCheckPorts::~HealthCheckPorts() {
    std::lock_guard lock(mutex_);
    for (const auto& [number, port] : ports_) server_.close(port.listener);
}

size_t HealthCheckPorts::update(const rules::Plan& plan) {
    auto wanted = health_checks_of(plan);
    std::lock_guard lock(mutex_);
    for (auto it = ports_.begin(); it != ports_.end();) {
        if (wanted.count(it->first)) {
            ++it;
            continue;
        }
        server_.close(it->second.listener);
        it = ports_.erase(it);
    }
    size_t failures = 0;
    for (auto& [number, state] : wanted) {
        auto existing = ports_.find(number);
        if (existing != ports_.end()) {
            std::lock_guard answer_lock(existing->second.answer->mutex);
            existing->second.answer->state = state;
            continue;
        }
        auto answer = std::make_shared<Answer>();
        answer->state = state;
        HttpRoutes routes;
        // Every path answers, as in kube-proxy: load balancers probe "/" or
        // a path of their own configuration.
        routes["*"] = [answer, healthy = proxy_healthy_] {
            HealthCheckState snapshot;
            {
                std::lock_guard answer_lock(answer->mutex);
                snapshot = answer->state;
            }
            return health_check_response(snapshot, healthy());
        };
        auto listener = server_.listen(HostPort{listen_address_, number}, std::move(routes));
        if (!listener) {
            ++failures;
            log::warn("health-check node port {} of Service {}/{}: {}", number, state.ns,
                      state.name, listener.error().describe());
            continue;
        }
        ports_.emplace(number, Port{*listener, std::move(answer)});
    }
    return failures;
}

std::map<uint16_t, HealthCheckState> HealthCheckPorts::open() const {
    std::lock_guard lock(mutex_);
    std::map<uint16_t, HealthCheckState> result;
    for (const auto& [number, port] : ports_) {
        std::lock_guard answer_lock(port.answer->mutex);
        result.emplace(number, port.answer->state);
    }
    return result;
}

}  // namespace sb::proxy
