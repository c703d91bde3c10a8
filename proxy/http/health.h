// Health reporting, as kube-proxy 1.33's pkg/proxy/healthcheck does it.
//
// ProxierHealth backs /healthz and /livez on --healthz-bind-address: the
// proxy is healthy unless an update has been queued for the health timeout
// (2 x --sync-period) or longer without a successful sync. /healthz also
// needs this node to be eligible for load-balancer traffic: not being
// deleted (metadata.deletionTimestamp) and without the cluster autoscaler's
// ToBeDeletedByClusterAutoscaler taint. Bodies and status codes are
// kube-proxy's; see docs/daemon.md.
//
// HealthCheckPorts serves the health-check node ports of Services with
// externalTrafficPolicy Local, on every listen address it is given:
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
#include <vector>

#include "base/ip.h"
#include "proxy/http/server.h"
#include "rules/plan.h"
#include "watch/objects.h"

namespace sb::proxy {

// kube-proxy's SyncNode rule: false when the Node is being deleted or
// carries the ToBeDeletedByClusterAutoscaler taint (any value and effect).
bool node_eligible(const watch::Node& node);

class ProxierHealth {
  public:
    using time_point = std::chrono::system_clock::time_point;
    explicit ProxierHealth(std::chrono::nanoseconds timeout) : timeout_(timeout) {}

    // A change is waiting for a sync (kube-proxy's QueuedUpdate): the oldest
    // such moment counts.
    void queued(time_point now);
    // A sync succeeded and applied everything queued before it started.
    void updated(time_point now);
    // This node's Node object changed; nullptr: it is unknown (no Node in
    // the source), which counts as eligible.
    void set_node(const watch::Node* node);

    struct Report {
        bool healthy = true;                     // the proxy's own state, node eligibility aside
        std::optional<time_point> last_updated;  // nullopt: never
        time_point current_time{};
        bool node_eligible = true;
    };
    Report check(time_point now) const;

    // kube-proxy's /healthz: 200 when healthy and the node is eligible, else
    // 503; the JSON body lists both IP families (one backend serves both).
    HttpResponse healthz_response(time_point now) const;
    // kube-proxy's /livez: the same without node eligibility.
    HttpResponse livez_response(time_point now) const;

  private:
    HttpResponse response(time_point now, bool with_node) const;

    const std::chrono::nanoseconds timeout_;
    mutable std::mutex mutex_;
    std::optional<time_point> oldest_queued_;  // guarded by mutex_
    std::optional<time_point> last_updated_;   // guarded by mutex_
    bool node_eligible_ = true;                // guarded by mutex_
};

// A time as Go's json.Marshal prints a time.Time in UTC (RFC 3339 with
// nanoseconds, trailing zeros dropped): "2024-05-01T12:00:00.123456789Z".
// nullopt is Go's zero time, "0001-01-01T00:00:00Z".
std::string format_go_json_time(std::optional<std::chrono::system_clock::time_point> time);

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

// The addresses health-check node ports listen on, as kube-proxy picks them:
// with no --nodeport-addresses, 0.0.0.0 and :: (each only when the node has
// an address of that family); otherwise the node's addresses inside those
// prefixes, and the unspecified address of a family whose prefix is the
// whole family (0.0.0.0/0, ::/0). Sorted, without duplicates.
std::vector<IpAddress> health_check_addresses(const std::vector<Prefix>& nodeport_addresses,
                                              const std::vector<IpAddress>& local_addresses);
// This host's interface addresses (getifaddrs); empty when they cannot be read.
std::vector<IpAddress> interface_addresses();

class HealthCheckPorts {
  public:
    using HealthyFunction = std::function<bool()>;
    // `server` must outlive this object.
    HealthCheckPorts(HttpServer& server, HealthyFunction proxy_healthy);
    ~HealthCheckPorts();  // closes every port it opened

    // Opens the ports the plan needs on every one of `addresses` (all of
    // them or, on a bind error, none: retried at the next update), closes
    // the others and updates the answers. A change of `addresses` reopens
    // every port. Returns the number of ports that could not be opened
    // (logged).
    size_t update(const rules::Plan& plan, const std::vector<IpAddress>& addresses);
    // The open ports, for tests and metrics.
    std::map<uint16_t, HealthCheckState> open() const;

  private:
    // Shared with the port's handlers on the io thread.
    struct Answer {
        std::mutex mutex;
        HealthCheckState state;  // guarded by mutex
    };
    struct Port {
        std::vector<int> listeners;  // one per address
        std::shared_ptr<Answer> answer;
    };
    void close(Port& port);

    HttpServer& server_;
    const HealthyFunction proxy_healthy_;
    mutable std::mutex mutex_;
    std::vector<IpAddress> addresses_;  // guarded by mutex_: what ports_ listen on
    std::map<uint16_t, Port> ports_;    // guarded by mutex_
};

}  // namespace sb::proxy
