// DnsWiring: the daemon's DNS. The node-local DNS addresses, the
// DnsService (the flags' and the Corefile's options with the node's parts:
// the node-local listen addresses, publish-after-programming, this node's
// Pods), CoreDNS's HTTP endpoints (the Corefile's prometheus, health and
// ready) and the Corefile's `reload`, which applies a changed Corefile to
// the first two.
//
// Thread safety: start(), stop() and drop_coredns_endpoints() for the
// daemon's controlling thread, in that order. service() is set by start()
// and never reset: read it from threads started after start() returned
// (the HTTP server's io thread, the sync thread). lameduck() from any
// thread. ensure_local_addresses() from start() and then the sync thread
// only. The Corefile reload runs on the reloader's thread.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/containers/published.h"
#include "base/result.h"
#include "dns/dns_service.h"
#include "proxy/app/corefile_reload.h"
#include "proxy/app/node_state.h"
#include "proxy/http/coredns_endpoints.h"
#include "proxy/http/metrics.h"
#include "proxy/http/server.h"
#include "proxy/options/options.h"
#include "watch/store.h"

namespace sb::proxy {

class DnsWiring {
  public:
    // `options`, `store`, `http` and `build_info` must outlive this object;
    // the CoreDNS endpoints listen on `http`, whose handlers read `store`.
    DnsWiring(const Options& options, watch::Store& store, HttpServer& http,
              const BuildInfo& build_info);
    DnsWiring(const DnsWiring&) = delete;
    DnsWiring& operator=(const DnsWiring&) = delete;

    // The node-local addresses, then DNS (when there is a listen address),
    // CoreDNS's endpoints and the Corefile's reload. The error (kIo, naming
    // --dns-listen) is a DNS set-up failure; a listener that cannot bind is
    // retried on DNS's own thread instead. `node_state`: the node state
    // folder, where DNS keeps its warm state (null: none).
    Status start(const NodeState* node_state);
    // The reloader (a reload under way reconfigures DNS), then DNS.
    // Idempotent.
    void stop();
    // Destroys CoreDNS's endpoints, the current and the replaced ones: only
    // once the HttpServer has stopped, as requests in flight may still run
    // their handlers. Idempotent.
    void drop_coredns_endpoints();

    // Before stop() on SIGTERM: the Corefile's health `lameduck`, during
    // which DNS and every endpoint go on serving. Blocks.
    // `cut_short`: as CorednsEndpoints::lameduck's.
    void lameduck(const std::function<bool()>& cut_short) const;

    // The DNS service; nullptr when DNS is off.
    dns::DnsService* service() const { return service_.get(); }

    // The node-local DNS link, addresses and notrack table (docs/dns.md). DNS
    // fails alone: a refusal is logged and the proxy goes on; the next full
    // sync retries.
    void ensure_local_addresses() const;

  private:
    // `dns` with the node-local listen addresses and the proxy's ordering
    // of names after rules.
    dns::DnsOptions with_node_parts(dns::DnsOptions dns) const;
    // The Corefile's `reload`: applies a changed Corefile over the flags'
    // DNS options (DNS, then CoreDNS's HTTP endpoints). Reloader thread.
    Result<std::optional<dns::ReloadConfig>> apply_reloaded_corefile(const std::string& text);
    // Opens `config`'s endpoints in place of the current ones, unless equal.
    void replace_coredns_endpoints(CorednsEndpointsConfig config);
    // What the Corefile's prometheus serves: coredns_build_info, the DNS
    // and process families.
    std::string coredns_metrics_text() const;

    const Options& options_;
    watch::Store& store_;
    HttpServer& http_;
    const BuildInfo& build_info_;
    std::optional<NodeState> node_state_;  // set by start()
    std::unique_ptr<dns::DnsService> service_;
    // The endpoints serving now (none without a Corefile that asks for
    // them), for lameduck().
    Published<CorednsEndpoints> coredns_;
    // Serialises replace_coredns_endpoints() (start(), then the reloader's
    // thread) and drop_coredns_endpoints(); guards opened_.
    std::mutex replace_mutex_;
    // Every endpoints object opened, kept (closed once replaced) until
    // drop_coredns_endpoints(); the last one is coredns_'s when that is set.
    std::vector<std::shared_ptr<CorednsEndpoints>> opened_;
    std::unique_ptr<CorefileReloader> reloader_;  // with `reload` in the Corefile
};

}  // namespace sb::proxy
