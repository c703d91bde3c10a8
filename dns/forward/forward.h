// Forwarder: asks upstream servers about names outside the cluster zone.
//
// Each name goes to one upstream set (one Corefile `forward`, with its own
// options: forward_policy.h): the set of the longest stub zone of another
// server block it is at or under (CoreDNS's choice of server block); else
// the kubernetes block's `forward FROM` sets it is under, longest FROM
// first, then the default set (`forward .`, --dns-upstream), skipping sets
// that `except` it. An excepted name no set takes fails (SERVFAIL: CoreDNS's
// answer when no next plugin handles it). Fail-over, loop drops and health
// stay within the set. The set's policy orders its upstreams per query; the
// next one is asked on a timeout (and on the set's failover rcodes); down
// upstreams (upstream_health.h) are skipped, or, with
// failfast_all_down, fail the query when all are. UDP (EDNS0, payload
// 1232) or TCP as the set's protocol says, TLS for its tls:// upstreams
// (tls_client.h); a truncated UDP reply is asked again over TCP. Over max_concurrent queries in
// flight in a set, a query is answered REFUSED at once (CoreDNS's forward.go). Spoofing (issue 10):
// every UDP attempt has a connected socket of its own (a fresh random source port; the kernel drops
// datagrams from any other address or port) and a fresh ID from the kernel's CSPRNG; a reply is
// accepted only with QR=1, that ID and our question (upstream_reply.h),
// others are dropped and counted. Identical questions in flight (same set,
// name case-insensitively, type, class and client protocol) share one
// upstream query; each waiter gets the reply (the server answers each client
// with its own ID). A waiting query keeps its question and callback only.
// A client address with max_outstanding_per_client waiting is REFUSED.
// An upstream that leads back to us (one of our listen addresses, or a probe
// query that comes back to our own server) is dropped with a log line; the
// probes ("sb-loop-<random>.<random>.<the set's zone>", names a forwarding
// resolver forwards) go out at start, on reload and every
// loop_check_interval.
//
// Thread safety: submit(), loop_detected() and the accessors may be called
// from any thread. Callbacks run on the forwarder's event loop thread (or in
// submit() once stopped) and must be quick: every pending query, UDP or
// TCP, completes there, so the per-set counters need no lock. TCP exchanges
// and health probes block on threads of their own and report to the loop.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"
#include "base/result.h"
#include "dns/forward/client_forward_cap.h"
#include "dns/forward/forward_metrics.h"
#include "dns/forward/forward_policy.h"
#include "dns/forward/secure_random.h"
#include "dns/forward/upstream_health.h"
#include "dns/forward/upstream_reply.h"
#include "dns/wire/wire.h"

namespace sb::dns {

// A stub domain: names at or under `zone` go to `upstreams` instead of the
// default ones: a Corefile server block of its own, or, with
// `cluster_block`, a `forward ZONE` of the kubernetes block
// (docs/corefile.md).
struct StubZone {
    std::string zone;  // wire form, lower-case
    std::vector<HostPort> upstreams;
    ForwardSetOptions options = {};
    bool cluster_block = false;
};

struct ForwarderOptions {
    std::vector<HostPort> upstreams;  // the default set
    ForwardSetOptions options;        // the default set's
    std::vector<StubZone> stubs;      // zones distinct per kind (cluster_block or not)
    std::chrono::milliseconds attempt_timeout{1000};
    unsigned max_attempts = 3;
    // Blocking TCP exchanges at once; four times as many when a set may ask
    // over TCP for every query (force_tcp, or the client's protocol).
    unsigned tcp_threads = 2;
    std::chrono::milliseconds tcp_timeout{2000};
    std::chrono::milliseconds probe_timeout{1000};  // a health probe's
    // Waiting forwarded queries per client address (0: no cap); over it, REFUSED.
    uint32_t max_outstanding_per_client = 256;
    // Loop probes again this often (a middle resolver may start to loop later).
    std::chrono::milliseconds loop_check_interval{60000};
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

    // Asks the upstreams of the question's set over the set's protocol
    // (`protocol`: the one the client used); `done` receives the reply (its
    // rcode may be any; REFUSED made here when the set is at max_concurrent
    // or `client` at max_outstanding_per_client) or an error when every
    // attempt failed, the set has no usable upstream or no set takes the
    // name (except). `client`: the asking address; none for our own queries
    // (cache refreshes), which no cap limits.
    void submit(const Question& question, Callback done,
                ClientProtocol protocol = ClientProtocol::kUdp,
                std::optional<IpAddress> client = std::nullopt);

    void append_metrics(metrics::TextWriter& out) const;

  private:
    struct Upstream {
        HostPort address;
        size_t set = 0;  // index in sets_
        bool dropped = false;
        bool tls = false;      // asked over TLS (the set's tls client)
        std::string tls_name;  // the name its certificate must carry; empty: its address
        std::string probe;     // lower-cased wire name of its loop probe; empty: none fits
    };
    // One upstream set. `preferred`, `turns` and `in_flight` are the event
    // loop's only.
    struct Set {
        std::string zone;  // wire, lower-case; the default set's is the root
        bool cluster_block = true;
        ForwardSetOptions options;
        std::vector<size_t> members;  // indices in upstreams_
        size_t preferred = 0;         // index in members (kPreferred)
        uint64_t turns = 0;           // queries so far (round_robin)
        uint32_t in_flight = 0;       // upstream queries (merged waiters not counted)
    };
    struct Submission {
        Question question;
        Callback done;
        ClientProtocol protocol = ClientProtocol::kUdp;
        std::optional<IpAddress> client;
    };
    // A query waiting for an upstream query (its own or one it merged into).
    struct Waiter {
        Callback done;
        std::optional<IpAddress> client;  // holds one unit of cap_ when set
    };
    // One upstream query, keyed in pending_ by a serial number.
    struct Pending {
        Question question;       // as the first waiter asked
        std::string lower_name;  // the question's, for matching replies
        std::string merge_key;   // its entry in merging_
        std::vector<Waiter> waiters;
        std::string packet;  // the query; its first two bytes: the current attempt's ID
        uint16_t id = 0;     // the current attempt's
        int fd = -1;         // the current UDP attempt's connected socket
        size_t set = 0;
        std::vector<size_t> order;  // members' indices in upstreams_, as the policy put them
        size_t position = 0;        // in order: where the next attempt starts
        size_t upstream = 0;        // the one asked now
        bool tcp = false;           // the current attempt is over TCP
        bool client_tcp = false;
        unsigned attempts = 0;
        std::chrono::steady_clock::time_point sent;
        std::chrono::steady_clock::time_point deadline;
    };
    using PendingMap = std::unordered_map<uint64_t, Pending>;
    // A TCP attempt for a TCP thread; its result comes back to the loop.
    struct TcpJob {
        uint64_t key = 0;
        unsigned attempt = 0;
        std::string packet;
        HostPort upstream;
        const TlsClient* tls = nullptr;  // set: over TLS; the set's options own it
        std::string tls_name;
        std::optional<IpAddress> source;
        std::chrono::milliseconds timeout{0};
    };
    struct TcpResult {
        uint64_t key = 0;
        unsigned attempt = 0;
        Result<Message> reply = make_error(ErrorCode::kInternal, "");
    };

    void run();
    void run_tcp();
    void start_query(Submission submission);
    void send_attempt(uint64_t key, Pending& pending);
    void retry_or_fail(uint64_t key, const char* reason);
    void attempt_failed(uint64_t key, const char* reason);
    // A reply accepted from the upstream of `key`'s current attempt.
    void replied(uint64_t key, Message reply);
    void dispatch(uint64_t key, Pending& pending, bool tcp);
    void handle_reply(uint64_t key);
    void handle_tcp_results();
    void close_attempt_socket(Pending& pending);
    size_t set_for(std::string_view lower_name) const;
    bool excepts(const Set& set, std::string_view lower_name) const;
    size_t usable_in(size_t set) const;
    // The set's max_connect_attempts, else the forwarder's max_attempts.
    unsigned max_attempts(size_t set) const;
    void complete(Callback& done, Result<Message> result);
    // Completes a submission that never waited, releasing its cap unit.
    void reject(Submission& submission, Result<Message> result);
    void finish(PendingMap::iterator it, Result<Message> result);
    void count_dropped(ReplyVerdict verdict);

    ForwarderOptions options_;
    std::vector<Set> sets_;             // [0]: the default set; then options_.stubs in order
    std::vector<size_t> cluster_sets_;  // the kubernetes block's sets, longest zone first
    mutable std::mutex mutex_;          // guards upstreams_, submissions_, tcp_results_
    std::vector<Upstream> upstreams_;
    std::atomic<size_t> usable_{0};
    // The first label of every probe name; set by the constructor, then read-only.
    std::string probe_label_;
    // The event loop's only: upstream queries, identical questions' shared
    // query, per-client counts, the next key, randomness, the next loop check.
    PendingMap pending_;
    std::unordered_map<std::string, uint64_t> merging_;
    ClientForwardCap cap_;
    uint64_t next_key_ = 1;
    SecureRandom random_;  // (and the constructor's, before the loop runs)
    std::chrono::steady_clock::time_point next_loop_check_;
    std::deque<Submission> submissions_;
    std::deque<TcpResult> tcp_results_;

    std::mutex tcp_mutex_;
    std::condition_variable tcp_cv_;
    std::deque<TcpJob> tcp_jobs_;

    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
    std::vector<std::thread> tcp_threads_;

    std::unique_ptr<ForwardMetrics> metrics_;
    std::unique_ptr<UpstreamHealth> health_;
    std::atomic<uint64_t> requests_{0};
    std::atomic<uint64_t> timeouts_{0};
    std::atomic<uint64_t> errors_{0};
    std::atomic<uint64_t> tcp_retries_{0};
    std::atomic<uint64_t> failures_{0};
    std::atomic<uint64_t> merged_{0};
    std::atomic<uint64_t> client_rejected_{0};
    std::atomic<uint64_t> dropped_[kReplyVerdicts] = {};
};

}  // namespace sb::dns
