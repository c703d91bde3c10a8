// Health reporting, as kube-proxy's pkg/proxy/healthcheck does it.
//
// ProxierHealth backs /healthz and /livez on --healthz-bind-address: the
// proxy is healthy unless an update has been queued for longer than the
// health timeout (2 x --sync-period) without a successful sync.
//
// HealthCheckPorts serves the health-check node ports of Services with
// externalTrafficPolicy Local: on 0.0.0.0:healthCheckNodePort,
// {"service":{"namespace":..,"name":..},"localEndpoints":N,"serviceProxyHealthy":..}
// with 200 when N > 0 (and the proxy is healthy), else 503, so that cloud
// load balancers only send traffic to nodes that have a local endpoint.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "proxy/http_server.h"
#include "rules/plan.h"

namespace sb::proxy {

class ProxierHealth {
  public:
    using time_point = std::chrono::system_clock::time_point;
    explicit ProxierHealth(std::chrono::nanoseconds timeout) : timeout_(timeout) {}

    // A change is waiting for a sync (kube-proxy's QueuedUpdate): the oldest
    // such moment counts.
    void queued(time_point now);
    // A sync succeeded and applied everything queued before it started.
    void updated(time_point now);

    struct Report {
        bool healthy = true;
        time_point last_updated{};  // epoch when never
        time_point current_time{};
    };
    Report check(time_point now) const;

    // The /healthz response: kube-proxy's JSON body, 200 or 503.
    HttpResponse healthz_response(time_point now) const;

  private:
    const std::chrono::nanoseconds timeout_;
    mutable std::mutex mutex_;
    std::optional<time_point> oldest_queued_;
    time_point last_updated_{};
};

// Go's time.Time.String() without the monotonic part, as kube-proxy's
// /healthz prints it: "2024-05-01 12:00:00.123456789 +0000 UTC".
std::string format_go_time(std::chrono::system_clock::time_point time);

// One health-check node port's answer.
struct HealthCheckState {
    std::string ns;
    std::string name;
    size_t local_endpoints = 0;  // distinct IPs of local, ready endpoints
    bool operator==(const HealthCheckState&) const = default;
};

// Per health-check node port in `plan`, the Service it reports on.
std::map<uint16_t, HealthCheckState> health_checks_of(const rules::Plan& plan);

HttpResponse health_check_response(const HealthCheckState& state, bool proxy_healthy);

class HealthCheckPorts {
  public:
    using HealthyFunction = std::function<bool()>;
    // `server` must outlive this object; `listen_address` is 0.0.0.0 in the
    // daemon (tests use loopback).
    HealthCheckPorts(HttpServer& server, IpAddress listen_address, HealthyFunction proxy_healthy);
    ~HealthCheckPorts();  // closes every port it opened

    // Opens the ports the plan needs, closes the others, updates the answers.
    // Returns the number of ports that could not be opened (logged; retried
    // at the next update).
    size_t update(const rules::Plan& plan);
    // The open ports, for tests and metrics.
    std::map<uint16_t, HealthCheckState> open() const;

  private:
    // Shared with the port's handler on the io thread.
    struct Answer {
        std::mutex mutex;
        HealthCheckState state;  // guarded by mutex
    };
    struct Port {
        int listener = 0;
        std::shared_ptr<Answer> answer;
    };

    HttpServer& server_;
    const IpAddress listen_address_;
    const HealthyFunction proxy_healthy_;
    mutable std::mutex mutex_;
    std::map<uint16_t, Port> ports_;
};

}  // namespace sb::proxy
