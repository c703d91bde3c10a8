// QueryDispatcher: what one serving thread does with a query, whatever
// socket it came from: the rendered-reply cache, the resolver (zone, hosts
// table), the cache and the forwarder of the published engine, the counters
// and the `log` lines, and the server-side search path (autopath: a walk of
// a Pod's search list for a first expansion the zone does not have, its
// zone steps answered at once, the others forwarded one after another). The UDP loops
// (dns/serve/udp_loop.h) and a worker's TCP event loop (dns/serve/worker.h) each own one; no socket
// is touched here, so a query's handling can be driven without one.
//
// A forwarded query completes on the forwarder's thread and its reply goes
// to the ReplySink given at construction (the worker owning the socket or
// connection).
//
// Thread safety: one thread per dispatcher (the serving thread), except
// that forward callbacks write the `forwarded_*` counters of stats().
// Private to the server (dns/server*.cpp, dns/serve/udp_loop.cpp) and its tests.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "dns/serve/engine.h"
#include "dns/serve/render_cache.h"
#include "dns/serve/server_options.h"
#include "dns/serve/server_stats.h"

namespace sb::dns {

enum Proto { kUdp = 0, kTcp = 1 };

// A client to reply to once a forwarded query completes.
struct ClientRef {
    Proto proto = kUdp;
    int udp_fd = -1;
    sockaddr_storage address{};  // the client's (a TCP client's: its connection's peer)
    socklen_t address_length = 0;
    uint64_t connection = 0;        // TCP connection id
    std::optional<HostPort> local;  // the socket's own address, for the log's {local}
};

// Delivers the reply to a forwarded query to its client (the worker owning
// the socket or connection). post() is called on the forwarder's thread.
class ReplySink {
  public:
    virtual void post(ClientRef client, std::string reply) = 0;

  protected:
    ~ReplySink() = default;
};

class QueryDispatcher {
  public:
    enum class Outcome { kReply, kNone, kForwarded };

    // `options`, `zones`, `engines` and `sink` must outlive the dispatcher
    // and every forward it submits.
    QueryDispatcher(const ServerOptions& options, const ZoneHolder& zones,
                    const EngineHolder& engines, ReplySink& sink);

    ServerStats& stats() { return *stats_; }
    const ServerStats& stats() const { return *stats_; }

    // Takes the zone, engine and hosts table published now (dropping the
    // rendered replies when one changed); call before a batch.
    void refresh_zone();

    // Handles one query: kReply with `out` set when the reply is ready now,
    // kForwarded when it will be posted to the sink, kNone when dropped. An
    // exception while answering is counted (run_guarded) and answered
    // SERVFAIL, as CoreDNS answers a plugin's panic.
    Outcome handle(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                   std::string& out);

    // The one branch the serving path pays for `log` when it is off.
    bool logging() const { return logging_; }
    // Writes the `log` line of a reply made now (not a forwarded one: the
    // forward callback logs those). Only when logging().
    void log_reply(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                   const std::string& reply, std::chrono::steady_clock::time_point start) const;

  private:
    Outcome answer(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                   std::string& out);
    Outcome handle_full(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                        std::string& out, const std::string* render_key, uint64_t key_hash,
                        size_t quick_limit);
    Outcome forward(std::span<const uint8_t> packet, Message query, Resolution resolution,
                    Proto proto, const ClientRef& client, std::string& out);
    // The client's Pod when the search path is on and it walks the default
    // list; null otherwise.
    const PodClient* autopath_client(const ClientRef& client) const;
    // Walks the rest of `pod`'s search list for `query`, whose name the
    // zone answered `plain` (NXDOMAIN) and is a first expansion; kNone when
    // it is not one (the caller replies `plain`).
    Outcome autopath(std::span<const uint8_t> packet, const Message& query, const Message& plain,
                     const PodClient& pod, Proto proto, const ClientRef& client, std::string& out);
    void shuffle(std::string& bytes, size_t offset, size_t size, size_t count);
    uint64_t next_random();
    void count_response(ServerStats::Answerer answerer, uint8_t rcode);

    const ServerOptions& options_;
    const ZoneHolder& zones_;
    const EngineHolder& engines_;
    ReplySink& sink_;
    std::shared_ptr<const QueryEngine> engine_;
    uint64_t engine_version_ = 0;
    Forwarder* forwarder_ = nullptr;  // engine_'s, or null
    // engine_'s kubernetes options and answer shuffling (the flags' without one).
    const ClusterPolicy* cluster_;
    AnswerShuffle shuffle_ = AnswerShuffle::kZoneAnswers;
    bool logging_ = false;  // engine_ has `log` rules
    // Shared with forward callbacks, which may outlive a query's thread.
    std::shared_ptr<ServerStats> stats_ = std::make_shared<ServerStats>();
    std::shared_ptr<const Zone> zone_;
    uint64_t zone_version_ = 0;
    bool forwarding_ = false;
    std::shared_ptr<const HostsTable> hosts_;
    uint64_t hosts_version_ = 0;
    std::shared_ptr<const PodDirectory> pods_;  // options_.pods'; null: none
    uint64_t pods_version_ = 0;
    RenderCache rendered_;
    std::string key_;
    uint64_t random_ = 1;
};

}  // namespace sb::dns
