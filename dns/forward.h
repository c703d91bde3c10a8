// Forwarder: asks upstream servers about names outside the cluster zone.
//
// Each name goes to one upstream set: the set of the longest stub zone it is
// at or under, else the default set (CoreDNS's choice of server block).
// Fail-over, loop drops and the preferred upstream stay within that set.
// UDP first (EDNS0, payload 1232), the same upstream again over TCP when the
// reply is truncated, the next upstream on a timeout, SERVFAIL or REFUSED.
// Replies are matched by upstream address, ID and question (case-insensitive).
// An upstream that leads back to us (one of our listen addresses, or a probe
// query that comes back to our own server) is dropped with a log line.
//
// Thread safety: submit(), loop_detected() and the accessors may be called
// from any thread. Callbacks run on the forwarder's threads and must be quick.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "dns/wire.h"

namespace sb::dns {

// The nameservers of a resolv.conf file (port 53); empty when unreadable.
std::vector<HostPort> resolv_conf_nameservers(const std::string& path);

// A stub domain: names at or under `zone` go to `upstreams` instead of the
// default ones (a Corefile server block of its own, docs/corefile.md).
struct StubZone {
    std::string zone;  // wire form, lower-case
    std::vector<HostPort> upstreams;
};

struct ForwarderOptions {
    std::vector<HostPort> upstreams;  // the default set
    std::vector<StubZone> stubs;      // zones distinct
    std::chrono::milliseconds attempt_timeout{1000};
    unsigned max_attempts = 3;
    unsigned tcp_threads = 2;
};

class Forwarder {
  public:
    using Callback = std::function<void(Result<Message>)>;

    explicit Forwarder(ForwarderOptions options);
    ~Forwarder();
    Forwarder(const Forwarder&) = delete;
    Forwarder& operator=(const Forwarder&) = delete;

    Status start();
    void stop();  // idempotent; pending callbacks get an error

    // Drops upstreams equal to one of `listen` (or loopback ones when we
    // listen on the unspecified address with the same port), logging each.
    void drop_self(const std::vector<HostPort>& listen);
    // Sends one probe query per upstream; a server that sees a probe name
    // calls loop_detected() with it.
    void send_loop_probes();
    // True (and the upstream is dropped) when `lower_name` is one of our probes.
    bool loop_detected(std::string_view lower_name);

    // At least one upstream (of any set) is usable.
    bool enabled() const { return usable_.load(std::memory_order_relaxed) > 0; }

    // Asks the upstreams of the question's set; `done` receives the reply (its
    // rcode may be any) or an error when every attempt failed or the set has
    // no usable upstream.
    void submit(const Question& question, Callback done);

    void append_metrics(metrics::TextWriter& out) const;

  private:
    struct Upstream {
        HostPort address;
        size_t set = 0;  // 0: the default set; i + 1: options_.stubs[i]
        bool dropped = false;
        std::string probe;  // lower-cased wire name of its loop probe
    };
    struct Pending {
        Question question;
        std::string packet;
        Callback done;
        size_t upstream = 0;
        unsigned attempts = 0;
        std::chrono::steady_clock::time_point deadline;
    };
    struct TcpJob {
        Question question;
        std::string packet;
        HostPort upstream;
        Callback done;
    };

    void run();
    void run_tcp();
    void send_attempt(Pending& pending);
    void retry_or_fail(uint16_t id, const char* reason);
    void handle_reply(int fd);
    size_t next_upstream(size_t after) const;
    size_t set_for(std::string_view lower_name) const;
    size_t usable_in(size_t set) const;
    void complete(Callback& done, Result<Message> result);
    uint16_t new_id();
    int socket_for(const HostPort& upstream) const;

    ForwarderOptions options_;
    mutable std::mutex mutex_;  // guards upstreams_, preferred_, pending_, submissions_
    std::vector<Upstream> upstreams_;
    std::atomic<size_t> usable_{0};
    // Per set, the index in upstreams_ to try first; kNoUpstream for an empty set.
    std::vector<size_t> preferred_;
    std::map<uint16_t, Pending> pending_;
    std::deque<std::pair<Question, Callback>> submissions_;

    std::mutex tcp_mutex_;
    std::condition_variable tcp_cv_;
    std::deque<TcpJob> tcp_jobs_;

    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    int udp4_fd_ = -1;
    int udp6_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
    std::vector<std::thread> tcp_threads_;
    uint64_t random_state_ = 0;

    std::atomic<uint64_t> requests_{0};
    std::atomic<uint64_t> responses_by_rcode_[6] = {};
    std::atomic<uint64_t> responses_other_{0};
    std::atomic<uint64_t> timeouts_{0};
    std::atomic<uint64_t> errors_{0};
    std::atomic<uint64_t> tcp_retries_{0};
    std::atomic<uint64_t> failures_{0};
};

}  // namespace sb::dns
