#include "proxy/http/health.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <set>

#include "base/log.h"
#include "base/timestamp.h"
#include "rules/service_policy.h"

namespace sb::proxy {

bool node_eligible(const watch::Node& node) {
    if (node.being_deleted) return false;
    for (const auto& taint : node.taints) {
        if (taint.key == watch::kToBeDeletedTaint) return false;
    }
    return true;
}

void ProxierHealth::queued(time_point now) {
    std::lock_guard lock(mutex_);
    if (!oldest_queued_) oldest_queued_ = now;
}

void ProxierHealth::updated(time_point now) {
    std::lock_guard lock(mutex_);
    last_updated_ = now;
    oldest_queued_.reset();
}

void ProxierHealth::set_node(const watch::Node* node) {
    std::lock_guard lock(mutex_);
    node_eligible_ = node == nullptr || node_eligible(*node);
}

ProxierHealth::Report ProxierHealth::check(time_point now) const {
    std::lock_guard lock(mutex_);
    Report report;
    report.current_time = now;
    report.last_updated = last_updated_;
    // kube-proxy: late once an update has waited the timeout or longer.
    report.healthy = !oldest_queued_ || now - *oldest_queued_ < timeout_;
    report.node_eligible = node_eligible_;
    return report;
}

HttpResponse ProxierHealth::healthz_response(time_point now) const {
    return response(now, true);
}

HttpResponse ProxierHealth::livez_response(time_point now) const {
    return response(now, false);
}

HttpResponse ProxierHealth::response(time_point now, bool with_node) const {
    const Report report = check(now);
    const bool ok = report.healthy && (!with_node || report.node_eligible);
    HttpResponse response;
    response.status = ok ? 200 : 503;
    response.content_type = "application/json";
    response.headers.emplace_back("X-Content-Type-Options", "nosniff");
    // kube-proxy's ProxyHealth as json.Marshal writes it: fields in struct
    // order, no spaces, "nodeEligible" only on /healthz, the status map's
    // keys sorted. While healthy, the top-level lastUpdated is now (kube-proxy
    // keeps that for compatibility); the per-family one is the last sync.
    const std::string last_sync = format_go_json_time(report.last_updated);
    const std::string family_status =
        fmt::format(R"({{"lastUpdated":"{}","healthy":{}}})", last_sync, report.healthy);
    std::string body = fmt::format(R"({{"lastUpdated":"{}","currentTime":"{}")",
                                   ok ? format_go_json_time(now) : last_sync,
                                   format_go_json_time(report.current_time));
    if (with_node) body += fmt::format(R"(,"nodeEligible":{})", report.node_eligible);
    body += fmt::format(R"(,"healthy":{},"status":{{"IPv4":{},"IPv6":{}}}}})", report.healthy,
                        family_status, family_status);
    response.body = std::move(body);
    return response;
}

std::string format_go_json_time(std::optional<std::chrono::system_clock::time_point> time) {
    return time ? format_rfc3339_nano(*time) : "0001-01-01T00:00:00Z";
}

std::map<uint16_t, HealthCheckState> health_checks_of(const rules::Plan& plan) {
    std::map<uint16_t, HealthCheckState> checks;
    std::map<uint16_t, std::set<IpAddress>> local_ips;
    for (const auto& port : plan.services) {
        const std::optional<rules::HealthCheck> check = rules::health_check_of(port);
        if (!check) continue;
        auto [it, inserted] = checks.try_emplace(check->node_port);
        if (inserted) {
            it->second.ns = port.ns;
            it->second.name = port.service;
        } else if (it->second.ns != port.ns || it->second.name != port.service) {
            // The API server allocates health-check node ports uniquely; a
            // clash means bad input: the first Service (in plan order) wins.
            continue;
        }
        // A Service counts the distinct local ready addresses of all its ports.
        local_ips[check->node_port].insert(check->local_ready_ips.begin(),
                                           check->local_ready_ips.end());
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

std::vector<IpAddress> health_check_addresses(const std::vector<Prefix>& nodeport_addresses,
                                              const std::vector<IpAddress>& local_addresses) {
    std::set<IpAddress> chosen;
    auto has_family = [&](IpFamily family) {
        for (const auto& address : local_addresses) {
            if (address.family() == family) return true;
        }
        return false;
    };
    const IpAddress any_v4;
    const IpAddress any_v6 = *IpAddress::parse("::");
    if (nodeport_addresses.empty()) {
        if (has_family(IpFamily::kV4)) chosen.insert(any_v4);
        if (has_family(IpFamily::kV6)) chosen.insert(any_v6);
        return {chosen.begin(), chosen.end()};
    }
    for (const auto& prefix : nodeport_addresses) {
        if (prefix.length() == 0) {
            if (has_family(prefix.family()))
                chosen.insert(prefix.family() == IpFamily::kV4 ? any_v4 : any_v6);
            continue;
        }
        for (const auto& address : local_addresses) {
            if (prefix.contains(address)) chosen.insert(address);
        }
    }
    // A family's unspecified address already covers its other addresses.
    for (auto it = chosen.begin(); it != chosen.end();) {
        const IpAddress& any = it->is_v4() ? any_v4 : any_v6;
        it = *it != any && chosen.count(any) ? chosen.erase(it) : std::next(it);
    }
    return {chosen.begin(), chosen.end()};
}

std::vector<IpAddress> interface_addresses() {
    std::vector<IpAddress> addresses;
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) != 0) {
        log::warn("health-check node ports: cannot list the interface addresses: {}",
                  std::strerror(errno));
        return addresses;
    }
    for (const ifaddrs* entry = list; entry; entry = entry->ifa_next) {
        if (!entry->ifa_addr) continue;
        if (entry->ifa_addr->sa_family == AF_INET) {
            const auto* v4 = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
            addresses.push_back(IpAddress::from_bytes(
                IpFamily::kV4, reinterpret_cast<const uint8_t*>(&v4->sin_addr)));
        } else if (entry->ifa_addr->sa_family == AF_INET6) {
            const auto* v6 = reinterpret_cast<const sockaddr_in6*>(entry->ifa_addr);
            addresses.push_back(IpAddress::from_bytes(IpFamily::kV6, v6->sin6_addr.s6_addr));
        }
    }
    ::freeifaddrs(list);
    return addresses;
}

HealthCheckPorts::HealthCheckPorts(HttpServer& server, HealthyFunction proxy_healthy)
    : server_(server), proxy_healthy_(std::move(proxy_healthy)) {}

HealthCheckPorts::~HealthCheckPorts() {
    std::lock_guard lock(mutex_);
    for (auto& [number, port] : ports_) close(port);
}

void HealthCheckPorts::close(Port& port) {
    for (int listener : port.listeners) server_.close(listener);
    port.listeners.clear();
}

size_t HealthCheckPorts::update(const rules::Plan& plan, const std::vector<IpAddress>& addresses) {
    auto wanted = health_checks_of(plan);
    std::lock_guard lock(mutex_);
    if (addresses != addresses_) {
        for (auto& [number, port] : ports_) close(port);
        ports_.clear();
        addresses_ = addresses;
    }
    for (auto it = ports_.begin(); it != ports_.end();) {
        if (wanted.count(it->first)) {
            ++it;
            continue;
        }
        close(it->second);
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
        Port port;
        port.answer = std::make_shared<Answer>();
        port.answer->state = state;
        bool opened = true;
        for (const auto& address : addresses_) {
            HttpRoutes routes;
            // Every path answers, as in kube-proxy: load balancers probe "/"
            // or a path of their own configuration.
            routes["*"] = [answer = port.answer, healthy = proxy_healthy_] {
                HealthCheckState snapshot;
                {
                    std::lock_guard answer_lock(answer->mutex);
                    snapshot = answer->state;
                }
                return health_check_response(snapshot, healthy());
            };
            // :: only for IPv6, so that 0.0.0.0 can take the same port.
            auto listener = server_.listen(HostPort{address, number}, std::move(routes),
                                           address.is_v6() && address.is_unspecified());
            if (!listener) {
                log::warn("health-check node port {} of Service {}/{}: {}", number, state.ns,
                          state.name, listener.error().describe());
                opened = false;
                break;
            }
            port.listeners.push_back(*listener);
        }
        if (!opened) {
            ++failures;
            close(port);
            continue;
        }
        ports_.emplace(number, std::move(port));
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
