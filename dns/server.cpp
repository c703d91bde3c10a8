#include "dns/server.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>

#include "base/log.h"
#include "dns/loadbalance.h"
#include "dns/panic_guard.h"
#include "dns/quick_query.h"
#include "dns/render_cache.h"
#include "dns/socket_util.h"
#include "dns/tcp_connections.h"

namespace sb::dns {

size_t ServerStats::type_index(uint16_t qtype) {
    switch (qtype) {
        case type::kA:
            return 0;
        case type::kAAAA:
            return 1;
        case type::kSRV:
            return 2;
        case type::kPTR:
            return 3;
        case type::kTXT:
            return 4;
        case type::kSOA:
            return 5;
        case type::kNS:
            return 6;
        case type::kCNAME:
            return 7;
        case type::kANY:
            return 8;
        case type::kMX:
            return 9;
        default:
            return 10;
    }
}

namespace {

constexpr uint16_t kTypeOfIndex[ServerStats::kTypes] = {
    type::kA,  type::kAAAA,  type::kSRV, type::kPTR, type::kTXT, type::kSOA,
    type::kNS, type::kCNAME, type::kANY, type::kMX,  0};

constexpr size_t kBatch = 64;
constexpr size_t kUdpBuffer = 4096;

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

// A client to reply to once a forwarded query completes, and the sink that
// delivers that reply (the worker owning the socket or connection).
class ReplySink {
  public:
    virtual void post(ClientRef client, std::string reply) = 0;

  protected:
    ~ReplySink() = default;
};

// The `log` line of one exchange, when a rule of `config` selects it.
void log_exchange(const QueryLogConfig& config, std::span<const uint8_t> query,
                  std::span<const uint8_t> reply, Proto proto, const ClientRef& client,
                  std::chrono::steady_clock::time_point start) {
    HostPort remote = from_socket_address(client.address);
    auto described = describe_exchange(
        query, reply, proto == kTcp, remote, client.local,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (!described) return;
    const QueryLogRule* rule = config.rule_for(described->lower_name);
    if (!rule || !rule->selects(*described)) return;
    write_stdout_line("[INFO] " + format_log_line(rule->format, *described));
}

// A forward that failed: the errors plugin's line when the query's server
// block has `errors` (CoreDNS logs nothing else then), else at debug.
void report_forward_error(const QueryLogConfig& config, const Message& query, const Error& error) {
    if (query.questions.empty()) return;
    const std::string lower = name_lower(query.questions[0].name);
    const QueryLogBlock* block = config.block_for(lower);
    if (block && block->errors) {
        write_stdout_line("[ERROR] " + format_error_line(static_cast<uint8_t>(Rcode::kServFail),
                                                         lower, query.questions[0].qtype,
                                                         error.describe()));
        return;
    }
    log::debug("dns: forward failed: {}", error.describe());
}

std::span<const uint8_t> bytes_of(const std::string& text) {
    return {reinterpret_cast<const uint8_t*>(text.data()), text.size()};
}

// The per-thread query state: the current zone and engine, the
// rendered-reply cache, the shuffle's random state and the counters. Used by
// one thread only.
// The flags path's kubernetes options, for an engine holder still empty.
const ClusterPolicy kFlagsCluster{};

class Engine {
  public:
    enum class Outcome { kReply, kNone, kForwarded };

    Engine(const ServerOptions& options, const ZoneHolder& zones, const EngineHolder& engines,
           ReplySink& sink)
        : options_(options), zones_(zones), engines_(engines), sink_(sink) {
        uint64_t seed = 0;
        if (::getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) {
            seed = reinterpret_cast<uintptr_t>(this);
        }
        random_ = seed | 1;
    }

    ServerStats& stats() { return *stats_; }
    const ServerStats& stats() const { return *stats_; }

    // Takes the zone and engine published now; call before a batch.
    void refresh_zone() {
        if (uint64_t version = engines_.version(); version != engine_version_) {
            engine_ = engines_.get();
            engine_version_ = version;
            forwarder_ = engine_ ? engine_->forwarder.get() : nullptr;
            cluster_ = engine_ ? &engine_->cluster : &kFlagsCluster;
            shuffle_ = engine_ ? engine_->shuffle : AnswerShuffle::kZoneAnswers;
            logging_ = engine_ && engine_->query_log.logs_queries();
            zone_.reset();  // the rendered replies were made with the old engine
        }
        uint64_t version = zones_.version();
        bool forwarding = forwarder_ && forwarder_->enabled();
        // The hosts table's replies are rendered too: a new table flushes.
        uint64_t hosts_version = options_.hosts ? options_.hosts->version() : 0;
        if (version != zone_version_ || !zone_ || forwarding != forwarding_ ||
            hosts_version != hosts_version_) {
            zone_ = zones_.get();
            zone_version_ = version;
            forwarding_ = forwarding;
            if (options_.hosts) hosts_ = options_.hosts->get();
            hosts_version_ = hosts_version;
            rendered_.clear();
            stats_->render_bytes.store(0, std::memory_order_relaxed);
        }
    }

    // Handles one query: kReply with `out` set when the reply is ready now,
    // kForwarded when it will be posted to the sink, kNone when dropped. An
    // exception while answering is counted (run_guarded) and answered
    // SERVFAIL, as CoreDNS answers a plugin's panic.
    Outcome handle(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                   std::string& out) {
        stats_->request_size[proto].record(n, false);
        Outcome outcome = Outcome::kNone;
        if (!run_guarded("dns query", [&] { outcome = answer(p, n, proto, client, out); })) {
            out = error_reply(std::span<const uint8_t>(p, n), Rcode::kServFail);
            outcome = out.empty() ? Outcome::kNone : Outcome::kReply;
        }
        if (outcome == Outcome::kReply) stats_->response_size[proto].record(out.size(), false);
        return outcome;
    }

    static void bump(std::atomic<uint64_t>& counter, uint64_t n = 1) {
        // One writer per Engine: a plain load+store avoids a locked RMW.
        counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }

    // The one branch the serving path pays for `log` when it is off.
    bool logging() const { return logging_; }
    // Writes the `log` line of a reply made now (not a forwarded one: the
    // forward callback logs those). Only when logging().
    void log_reply(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                   const std::string& reply, std::chrono::steady_clock::time_point start) const {
        log_exchange(engine_->query_log, {p, n}, bytes_of(reply), proto, client, start);
    }

  private:
    Outcome answer(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                   std::string& out) {
        QuickQuery quick;
        if (quick_parse(p, n, quick, key_)) {
            const size_t family = family_index(client);
            bump(stats_->requests[proto][family][ServerStats::type_index(quick.qtype)]);
            if (quick.dnssec_ok) bump(stats_->do_requests);
            size_t limit = proto == kTcp ? 65535
                           : quick.edns
                               ? std::clamp<size_t>(quick.udp_size, kClassicUdpSize, kEdnsUdpSize)
                               : kClassicUdpSize;
            key_.push_back(static_cast<char>((quick.edns ? 1 : 0) | (quick.dnssec_ok ? 2 : 0)));
            key_.push_back(static_cast<char>(limit >> 8));
            key_.push_back(static_cast<char>(limit & 0xff));
            uint64_t key_hash = RenderCache::hash(key_);
            if (const RenderCache::Entry* r = rendered_.find(key_, key_hash)) {
                RenderCache::reply_to(*r, {p, n}, quick.name_end, out);
                shuffle(out, r->shuffle_offset, r->shuffle_size, r->shuffle_count);
                bump(stats_->render_hits);
                count_response(ServerStats::kKubernetes, static_cast<uint8_t>(out[3] & 0x0f));
                return Outcome::kReply;
            }
            return handle_full(p, n, proto, client, out, &key_, key_hash, limit);
        }
        return handle_full(p, n, proto, client, out, nullptr, 0, 0);
    }

    void shuffle(std::string& bytes, size_t offset, size_t size, size_t count) {
        if (shuffle_ == AnswerShuffle::kNone || count < 2 || offset + size * count > bytes.size())
            return;
        char temp[64];
        if (size > sizeof(temp)) return;
        for (size_t i = count - 1; i > 0; --i) {
            size_t j = next_random() % (i + 1);
            if (i == j) continue;
            char* a = bytes.data() + offset + i * size;
            char* b = bytes.data() + offset + j * size;
            std::memcpy(temp, a, size);
            std::memcpy(a, b, size);
            std::memcpy(b, temp, size);
        }
    }

    uint64_t next_random() {
        random_ ^= random_ >> 12;
        random_ ^= random_ << 25;
        random_ ^= random_ >> 27;
        return random_ * 0x2545F4914F6CDD1Dull;
    }

    void count_response(ServerStats::Answerer answerer, uint8_t rcode) {
        bump(stats_->responses[answerer][std::min<size_t>(rcode, ServerStats::kRcodes - 1)]);
    }

    // CoreDNS's `family` label: the client's address family (a TCP client's
    // is its connection's).
    static size_t family_index(const ClientRef& client) {
        return client.address.ss_family == AF_INET6 ? 1 : 0;
    }

    Outcome handle_full(const uint8_t* p, size_t n, Proto proto, const ClientRef& client,
                        std::string& out, const std::string* render_key, uint64_t key_hash,
                        size_t quick_limit) {
        auto packet = std::span<const uint8_t>(p, n);
        auto parsed = parse_message(packet);
        if (!parsed) {
            if (!render_key) {
                bump(stats_->requests[proto][family_index(client)][ServerStats::kTypes - 1]);
            }
            out = error_reply(packet, Rcode::kFormErr);
            if (out.empty()) {
                bump(stats_->dropped);
                return Outcome::kNone;
            }
            count_response(ServerStats::kServerItself, static_cast<uint8_t>(Rcode::kFormErr));
            return Outcome::kReply;
        }
        Message& query = *parsed;
        if (!render_key) {
            uint16_t qtype = query.questions.size() == 1 ? query.questions[0].qtype : 0;
            bump(stats_->requests[proto][family_index(client)][ServerStats::type_index(qtype)]);
            if (query.edns && query.edns->dnssec_ok) bump(stats_->do_requests);
        }
        if (forwarder_ && query.questions.size() == 1 &&
            forwarder_->loop_detected(name_lower(query.questions[0].name))) {
            out = rcode_reply(query, Rcode::kRefused);
            count_response(ServerStats::kServerItself, static_cast<uint8_t>(Rcode::kRefused));
            return Outcome::kReply;
        }
        ResolverOptions resolver_options;
        resolver_options.forwarding = forwarding_;
        resolver_options.cluster = cluster_;
        resolver_options.hosts = hosts_.get();
        Resolution resolution = resolve(zone_.get(), query, resolver_options);
        if (resolution.kind == Resolution::Kind::kDrop) {
            bump(stats_->dropped);
            return Outcome::kNone;
        }
        if (resolution.kind == Resolution::Kind::kForward) {
            return forward(packet, std::move(query), std::move(resolution), proto, client, out);
        }
        size_t limit = finish_reply(query, resolution.response);
        if (proto == kTcp) limit = 65535;
        WriteResult written = write_message(resolution.response, limit);
        if (written.truncated) bump(stats_->truncated);
        if (render_key && limit == quick_limit) {
            rendered_.insert(*render_key, key_hash, written);
            stats_->render_bytes.store(rendered_.bytes(), std::memory_order_relaxed);
            stats_->render_flushes.store(rendered_.flushes(), std::memory_order_relaxed);
        }
        out = std::move(written.bytes);
        shuffle(out, written.shuffle_offset, written.shuffle_size, written.shuffle_count);
        count_response(ServerStats::kKubernetes, resolution.response.header.rcode);
        return Outcome::kReply;
    }

    // A reply with no records: `query`'s header and question, `rcode`.
    static std::string rcode_reply(const Message& query, Rcode rcode) {
        Message reply;
        reply.header = query.header;
        reply.header.qr = true;
        reply.header.rcode = static_cast<uint8_t>(rcode);
        reply.questions = query.questions;
        return write_message(reply).bytes;
    }

    // The reply to `query` given the resolver's partial reply and the
    // upstream's; `shuffle_seed` set: its records load-balanced.
    static std::string merge_upstream(const Message& query, Message reply, Proto proto,
                                      const Result<CachedAnswer>& upstream,
                                      std::optional<uint64_t> shuffle_seed, bool& truncated) {
        if (!upstream) {
            reply.answers.clear();
            reply.header.rcode = static_cast<uint8_t>(Rcode::kServFail);
        } else {
            reply.header.rcode = upstream->rcode;
            reply.answers.insert(reply.answers.end(), upstream->answers.begin(),
                                 upstream->answers.end());
            reply.authority = upstream->authority;
            reply.additional = upstream->additional;
        }
        reply.header.ra = true;
        if (shuffle_seed) load_balance(reply, *shuffle_seed);
        size_t limit = finish_reply(query, reply);
        if (proto == kTcp) limit = 65535;
        WriteResult written = write_message(reply, limit);
        truncated = written.truncated;
        return std::move(written.bytes);
    }

    Outcome forward(std::span<const uint8_t> packet, Message query, Resolution resolution,
                    Proto proto, const ClientRef& client, std::string& out) {
        auto now = Cache::Clock::now();
        std::optional<uint64_t> shuffle_seed;
        if (shuffle_ == AnswerShuffle::kAll) shuffle_seed = next_random();
        const QueryEngine* engine = engine_.get();
        Cache* cache = engine->caches
                           ? engine->caches->for_name(name_lower(resolution.forward.name))
                           : nullptr;
        CacheLookup found;
        if (cache) found = cache->lookup(resolution.forward, now);
        if (found.kind != CacheLookup::Kind::kMiss && !found.verify) {
            if (found.refresh) {
                Question question = resolution.forward;
                engine->in_flight.fetch_add(1, std::memory_order_relaxed);
                forwarder_->submit(question, [engine, cache, question](Result<Message> upstream) {
                    run_guarded("dns cache refresh", [&] {
                        cache->refreshed(question, std::move(upstream), Cache::Clock::now());
                    });
                    // Last use of the engine: once 0, its owner may stop and free it.
                    engine->in_flight.fetch_sub(1, std::memory_order_release);
                });
            }
            bool truncated = false;
            out = merge_upstream(query, std::move(resolution.response), proto, found.answer,
                                 shuffle_seed, truncated);
            if (truncated) bump(stats_->truncated);
            count_response(ServerStats::kCache, static_cast<uint8_t>(out[3] & 0x0f));
            return Outcome::kReply;
        }
        std::optional<CachedAnswer> stale;
        if (found.verify) stale = std::move(found.answer);
        // The callback runs on the forwarder's thread: it touches only the
        // sink (thread-safe), the cache (thread-safe), atomics shared with the
        // exporter, and the engine, which its owner keeps until `in_flight` is
        // back to 0.
        std::shared_ptr<ServerStats> stats = stats_;
        ReplySink* sink = &sink_;
        Question question = resolution.forward;
        // The query's bytes for its log line; none when nothing logs.
        std::string logged_query =
            logging_ ? std::string(reinterpret_cast<const char*>(packet.data()), packet.size())
                     : std::string();
        // For the SERVFAIL should on_reply throw: the client (and a TCP
        // connection's count of pending replies) still gets its answer.
        Message asked;
        asked.header = query.header;
        asked.questions = query.questions;
        // Only what the reply is built from waits with the callback (issue 10).
        auto on_reply = [sink, stats, engine, cache, query = reply_basis(query), proto, client,
                         question, now, shuffle_seed, stale = std::move(stale),
                         reply = std::move(resolution.response),
                         logged_query = std::move(logged_query)](Result<Message> upstream) mutable {
            if (!upstream) report_forward_error(engine->query_log, query, upstream.error());
            Result<CachedAnswer> answer =
                cache ? cache->complete(question, std::move(upstream), std::move(stale),
                                        Cache::Clock::now())
                      : upstream_answer(std::move(upstream));
            bool truncated = false;
            std::string bytes =
                merge_upstream(query, std::move(reply), proto, answer, shuffle_seed, truncated);
            if (!logged_query.empty()) {
                log_exchange(engine->query_log, bytes_of(logged_query), bytes_of(bytes), proto,
                             client, now);
            }
            if (truncated) stats->forwarded_truncated.fetch_add(1);
            stats->forwarded_responses[std::min<size_t>(bytes[3] & 0x0f, ServerStats::kRcodes - 1)]
                .fetch_add(1);
            stats->forwarded_duration.record(
                std::chrono::duration<double>(Cache::Clock::now() - now).count(), 1, true);
            stats->forwarded_response_size[proto].record(bytes.size(), true);
            sink->post(client, std::move(bytes));
        };
        engine->in_flight.fetch_add(1, std::memory_order_relaxed);
        forwarder_->submit(
            question,
            [on_reply = std::move(on_reply), asked = std::move(asked), sink, client,
             engine](Result<Message> upstream) mutable {
                if (!run_guarded("dns forwarded reply", [&] { on_reply(std::move(upstream)); })) {
                    run_guarded("dns forwarded reply",
                                [&] { sink->post(client, rcode_reply(asked, Rcode::kServFail)); });
                }
                // Last use of the engine: once 0, its owner may stop and free it.
                engine->in_flight.fetch_sub(1, std::memory_order_release);
            },
            proto == kTcp ? ClientProtocol::kTcp : ClientProtocol::kUdp,
            from_socket_address(client.address).address);
        return Outcome::kForwarded;
    }

    const ServerOptions& options_;
    const ZoneHolder& zones_;
    const EngineHolder& engines_;
    ReplySink& sink_;
    std::shared_ptr<const QueryEngine> engine_;
    uint64_t engine_version_ = 0;
    Forwarder* forwarder_ = nullptr;  // engine_'s, or null
    // engine_'s kubernetes options and answer shuffling (the flags' without one).
    const ClusterPolicy* cluster_ = &kFlagsCluster;
    AnswerShuffle shuffle_ = AnswerShuffle::kZoneAnswers;
    bool logging_ = false;  // engine_ has `log` rules
    // Shared with forward callbacks, which may outlive a query's thread.
    std::shared_ptr<ServerStats> stats_ = std::make_shared<ServerStats>();
    std::shared_ptr<const Zone> zone_;
    uint64_t zone_version_ = 0;
    bool forwarding_ = false;
    std::shared_ptr<const HostsTable> hosts_;
    uint64_t hosts_version_ = 0;
    RenderCache rendered_;
    std::string key_;
    uint64_t random_ = 1;
};

// Sends one batch of UDP replies. A message the kernel refuses (EINVAL for
// a reply to port 0, EPERM or EACCES from a firewall, no route) is skipped,
// counted as dropped, and the rest of the batch still goes; a full socket
// buffer (EAGAIN) drops what is left, as UDP does.
void send_batch(int fd, std::span<mmsghdr> replies, ServerStats& stats) {
    size_t sent = 0;
    while (sent < replies.size()) {
        int n = ::sendmmsg(fd, replies.data() + sent, static_cast<unsigned>(replies.size() - sent),
                           MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            Engine::bump(stats.dropped, replies.size() - sent);
            return;
        }
        Engine::bump(stats.dropped);  // replies[sent] failed alone
        ++sent;
    }
}

}  // namespace

class Server::Worker : public ReplySink, public TcpQueryHandler {
  public:
    Worker(const ServerOptions& options, const ZoneHolder& zones, const EngineHolder& engines)
        : options_(options),
          zones_(zones),
          engines_(engines),
          tcp_engine_(options, zones, engines, *this) {}

    ~Worker() {
        stop();
        if (epoll_fd_ >= 0) ::close(epoll_fd_);
        if (wake_fd_ >= 0) ::close(wake_fd_);
    }

    // Creates the epoll set and starts the TCP/inbox thread; sockets come
    // with add_udp() and add_tcp().
    Status open() {
        epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
        wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (epoll_fd_ < 0 || wake_fd_ < 0) {
            return make_error(ErrorCode::kIo, "epoll/eventfd", errno);
        }
        add_fd(wake_fd_, EPOLLIN, kWakeTag);
        TcpLimits limits;
        limits.max_connections =
            options_.max_tcp_connections / std::max<size_t>(1, options_.workers);
        limits.read_timeout = options_.tcp_read_timeout;
        limits.idle_timeout = options_.tcp_idle_timeout;
        tcp_ = std::make_unique<TcpConnections>(epoll_fd_, limits, *this, tcp_engine_.stats());
        thread_ = std::thread([this] { run(); });
        return {};
    }

    // Takes a bound UDP socket and starts its serving thread. Not after stop().
    void add_udp(int fd) {
        int buffer = 4 << 20;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer));
        // The UDP thread blocks in recvmmsg; the timeout bounds how long
        // stop() waits should the shutdown() wake-up be missed.
        timeval timeout{0, 500000};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
        int flags = ::fcntl(fd, F_GETFL);
        ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
        std::lock_guard lock(sockets_mutex_);
        auto& loop = udp_loops_.emplace_back(
            std::make_unique<UdpLoop>(fd, options_, zones_, engines_, *this));
        UdpLoop* raw = loop.get();
        loop->thread = std::thread([this, raw] { serve_udp(*raw); });
    }

    // Takes a listening TCP socket; the epoll thread accepts on it from now
    // on (epoll_ctl is safe while that thread waits). Not after stop().
    void add_tcp(int fd) {
        std::lock_guard lock(sockets_mutex_);
        tcp_fds_.push_back(fd);
        add_fd(fd, EPOLLIN, kListenTag | static_cast<uint64_t>(fd));
    }

    void stop() {
        if (stopping_.exchange(true)) return;
        wake();
        if (thread_.joinable()) thread_.join();
        std::lock_guard lock(sockets_mutex_);
        for (auto& loop : udp_loops_) ::shutdown(loop->fd, SHUT_RD);
        for (auto& loop : udp_loops_) {
            if (loop->thread.joinable()) loop->thread.join();
        }
        // The sockets close now, so a stopped server no longer holds its
        // addresses (a reload may bind them again). The inbox and its eventfd
        // stay until destruction: the forwarder may still post into them.
        if (tcp_) tcp_->close_all();
        for (auto& loop : udp_loops_) {
            if (loop->fd >= 0) ::close(loop->fd);
            loop->fd = -1;
        }
        for (int fd : tcp_fds_) ::close(fd);
        tcp_fds_.clear();
    }

    template <typename F>
    void for_each_stats(F f) const {
        std::lock_guard lock(sockets_mutex_);
        f(tcp_engine_.stats());
        for (const auto& loop : udp_loops_) f(loop->engine.stats());
    }

    // Called on the forwarder's thread: queue the reply and wake the loop.
    void post(ClientRef client, std::string reply) override {
        {
            std::lock_guard lock(inbox_mutex_);
            inbox_.emplace_back(std::move(client), std::move(reply));
        }
        wake();
    }

  private:
    static constexpr uint64_t kWakeTag = 1ull << 62;
    static constexpr uint64_t kListenTag = 3ull << 60;
    static constexpr uint64_t kTagMask = 0xfull << 60;
    static_assert(kListenTag >= TcpConnections::kFirstReservedTag);

    // One thread per UDP socket, blocked in recvmmsg: under load a batch
    // costs one receive and one send system call, with no epoll round.
    struct UdpLoop {
        UdpLoop(int socket, const ServerOptions& options, const ZoneHolder& zones,
                const EngineHolder& engines, ReplySink& sink)
            : fd(socket), engine(options, zones, engines, sink) {
            sockaddr_storage bound{};
            socklen_t length = sizeof(bound);
            if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) == 0) {
                local = from_socket_address(bound);
            }
        }
        int fd;
        std::optional<HostPort> local;  // the bound address, for the log's {local}
        Engine engine;
        std::thread thread;
    };

    void wake() {
        uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof(one));
    }

    void add_fd(int fd, uint32_t events, uint64_t tag) {
        epoll_event event{};
        event.events = events;
        event.data.u64 = tag;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    }

    void drain_inbox() {
        std::deque<std::pair<ClientRef, std::string>> items;
        {
            std::lock_guard lock(inbox_mutex_);
            items.swap(inbox_);
        }
        for (auto& [client, bytes] : items) {
            if (client.proto == kUdp) {
                if (rate_limited(client, bytes, std::chrono::steady_clock::now())) continue;
                ::sendto(client.udp_fd, bytes.data(), bytes.size(), MSG_DONTWAIT,
                         reinterpret_cast<const sockaddr*>(&client.address), client.address_length);
                continue;
            }
            tcp_->deliver(client.connection, bytes);
        }
    }

    // --dns-rrl's verdict on a UDP reply: true when it is not to be sent;
    // a slipped reply is cut to its question in place.
    bool rate_limited(const ClientRef& client, std::string& reply,
                      std::chrono::steady_clock::time_point now) {
        return options_.rrl && options_.rrl->admit(client.address, reply, now) ==
                                   ResponseRateLimiter::Verdict::kDrop;
    }

    void serve_udp(UdpLoop& loop) {
        std::vector<std::array<uint8_t, kUdpBuffer>> buffers(kBatch);
        std::array<std::string, kBatch> replies;
        std::array<mmsghdr, kBatch> in{};
        std::array<iovec, kBatch> in_iov{};
        std::array<sockaddr_storage, kBatch> from{};
        std::array<mmsghdr, kBatch> out{};
        std::array<iovec, kBatch> out_iov{};
        ServerStats& stats = loop.engine.stats();
        // One batch; Engine::handle guards each query, this guards the rest.
        auto serve_batch = [&] {
            for (size_t i = 0; i < kBatch; ++i) {
                in_iov[i] = {buffers[i].data(), kUdpBuffer};
                in[i].msg_hdr = {};
                in[i].msg_hdr.msg_iov = &in_iov[i];
                in[i].msg_hdr.msg_iovlen = 1;
                in[i].msg_hdr.msg_name = &from[i];
                in[i].msg_hdr.msg_namelen = sizeof(sockaddr_storage);
            }
            int received = ::recvmmsg(loop.fd, in.data(), kBatch, MSG_WAITFORONE, nullptr);
            if (received <= 0) return;  // timeout, signal or shutdown: check stopping_
            auto start = std::chrono::steady_clock::now();
            loop.engine.refresh_zone();
            size_t replies_ready = 0;
            for (int i = 0; i < received; ++i) {
                ClientRef client;
                client.proto = kUdp;
                client.udp_fd = loop.fd;
                client.address = from[i];
                client.address_length = in[i].msg_hdr.msg_namelen;
                std::string& reply = replies[replies_ready];
                size_t length = std::min<size_t>(in[i].msg_len, kUdpBuffer);
                client.local = loop.local;
                if (loop.engine.handle(buffers[i].data(), length, kUdp, client, reply) !=
                        Engine::Outcome::kReply ||
                    rate_limited(client, reply, start)) {
                    continue;
                }
                if (loop.engine.logging()) {
                    loop.engine.log_reply(buffers[i].data(), length, kUdp, client, reply, start);
                }
                out_iov[replies_ready] = {reply.data(), reply.size()};
                out[replies_ready].msg_hdr = {};
                out[replies_ready].msg_hdr.msg_iov = &out_iov[replies_ready];
                out[replies_ready].msg_hdr.msg_iovlen = 1;
                out[replies_ready].msg_hdr.msg_name = &from[i];
                out[replies_ready].msg_hdr.msg_namelen = in[i].msg_hdr.msg_namelen;
                ++replies_ready;
            }
            // One clock read per batch: every reply of the batch took the
            // batch's time from receipt to send.
            stats.duration.record(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                replies_ready, false);
            send_batch(loop.fd, std::span(out.data(), replies_ready), stats);
        };
        while (!stopping_.load(std::memory_order_relaxed))
            run_guarded("dns udp worker", serve_batch);
    }

    // TcpQueryHandler: a query read from a connection, on the event loop.
    Outcome answer_tcp(std::span<const uint8_t> query, const TcpPeer& peer,
                       std::string& reply) override {
        auto start = std::chrono::steady_clock::now();
        ClientRef client;
        client.proto = kTcp;
        client.connection = peer.connection;
        client.address = peer.address;
        client.address_length = peer.address_length;
        client.local = peer.local;
        Engine::Outcome outcome =
            tcp_engine_.handle(query.data(), query.size(), kTcp, client, reply);
        if (outcome == Engine::Outcome::kForwarded) return Outcome::kForwarded;
        if (outcome != Engine::Outcome::kReply) return Outcome::kNone;
        if (tcp_engine_.logging()) {
            tcp_engine_.log_reply(query.data(), query.size(), kTcp, client, reply, start);
        }
        tcp_engine_.stats().duration.record(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1,
            false);
        return Outcome::kReply;
    }

    void run() {
        std::array<epoll_event, 64> events;
        while (!stopping_.load(std::memory_order_relaxed)) {
            int n = ::epoll_wait(epoll_fd_, events.data(), events.size(),
                                 tcp_->wait_ms(std::chrono::steady_clock::now(), 1000));
            tcp_engine_.refresh_zone();
            for (int i = 0; i < n; ++i) {
                uint64_t tag = events[i].data.u64;
                if (tag == kWakeTag) {
                    uint64_t value = 0;
                    (void)!::read(wake_fd_, &value, sizeof(value));
                    run_guarded("dns worker inbox", [this] { drain_inbox(); });
                } else if ((tag & kTagMask) == kListenTag) {
                    run_guarded("dns tcp accept", [this, tag] {
                        tcp_->accept(static_cast<int>(tag & ~kTagMask), tag);
                    });
                } else if (!run_guarded("dns tcp connection", [this, tag, &events, i] {
                               tcp_->on_event(tag, events[i].events);
                           })) {
                    // Its buffered frames would throw again on the next event.
                    tcp_->close(tag);
                }
            }
            run_guarded("dns tcp timers", [this] { tcp_->tick(std::chrono::steady_clock::now()); });
        }
    }

    const ServerOptions& options_;
    const ZoneHolder& zones_;
    const EngineHolder& engines_;

    int epoll_fd_ = -1;
    int wake_fd_ = -1;
    // Sockets are added by the server's retry thread while the worker runs.
    mutable std::mutex sockets_mutex_;
    std::vector<std::unique_ptr<UdpLoop>> udp_loops_;  // guarded by sockets_mutex_
    std::vector<int> tcp_fds_;  // guarded by sockets_mutex_; closed at the end
    std::thread thread_;
    std::atomic<bool> stopping_{false};

    // Event-loop thread state.
    Engine tcp_engine_;
    std::unique_ptr<TcpConnections> tcp_;  // made by open()

    std::mutex inbox_mutex_;
    std::deque<std::pair<ClientRef, std::string>> inbox_;
};

void ServerStats::Histogram::record(double seconds, uint64_t n, bool shared) {
    if (n == 0) return;
    size_t bucket = 0;
    while (bucket < kBuckets.size() && seconds > kBuckets[bucket]) ++bucket;
    if (shared) {
        buckets[bucket].fetch_add(n, std::memory_order_relaxed);
        sum.fetch_add(seconds * static_cast<double>(n), std::memory_order_relaxed);
        return;
    }
    // Single writer: plain load+store, no locked instruction on the hot path.
    buckets[bucket].store(buckets[bucket].load(std::memory_order_relaxed) + n,
                          std::memory_order_relaxed);
    sum.store(sum.load(std::memory_order_relaxed) + seconds * static_cast<double>(n),
              std::memory_order_relaxed);
}

void ServerStats::SizeHistogram::record(size_t bytes, bool shared) {
    size_t bucket = 0;
    while (bucket < kSizeBuckets.size() && static_cast<double>(bytes) > kSizeBuckets[bucket]) {
        ++bucket;
    }
    if (shared) {
        buckets[bucket].fetch_add(1, std::memory_order_relaxed);
        sum.fetch_add(bytes, std::memory_order_relaxed);
        return;
    }
    // Single writer: plain load+store, no locked instruction on the hot path.
    buckets[bucket].store(buckets[bucket].load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
    sum.store(sum.load(std::memory_order_relaxed) + bytes, std::memory_order_relaxed);
}

Server::Server(ServerOptions options, const ZoneHolder& zones, const EngineHolder& engines)
    : options_(std::move(options)), zones_(zones), engines_(engines) {
    options_.workers = std::max(1u, options_.workers);
}

Server::~Server() {
    stop();
}

namespace {

const char* protocol_name(int type) {
    return type == SOCK_STREAM ? "tcp" : "udp";
}

// A port 0 listen address: the kernel picks a port free for both UDP and
// TCP (the UDP socket picks it, TCP must bind the same one).
Result<uint16_t> pick_port(const HostPort& address) {
    for (int attempt = 0; attempt < 20; ++attempt) {
        auto probe = bind_socket(address, SOCK_DGRAM);
        if (!probe) return probe.error();
        SocketAddress bound;
        socklen_t length = sizeof(sockaddr_storage);
        ::getsockname(*probe, reinterpret_cast<sockaddr*>(&bound.storage()), &length);
        HostPort picked = from_socket_address(bound.storage());
        auto tcp = bind_socket(picked, SOCK_STREAM);
        ::close(*probe);
        if (tcp) {
            ::close(*tcp);
            return picked.port;
        }
    }
    return make_error(ErrorCode::kIo, "no free port for " + address.to_string());
}

}  // namespace

Status Server::start() {
    for (unsigned i = 0; i < options_.workers; ++i) {
        auto worker = std::make_unique<Worker>(options_, zones_, engines_);
        if (auto status = worker->open(); !status) return status;
        workers_.push_back(std::move(worker));
    }
    {
        std::lock_guard lock(mutex_);
        addresses_ = options_.listen;
        for (size_t i = 0; i < options_.listen.size(); ++i) {
            for (int type : {SOCK_DGRAM, SOCK_STREAM}) {
                listeners_.push_back(Listener{i, type, false, 0, {}});
            }
        }
    }
    if (!bind_pending(false)) retry_thread_ = std::thread([this] { retry_binds(); });
    return {};
}

Status Server::bind_listener(size_t index) {
    HostPort address;
    int type = 0;
    {
        std::lock_guard lock(mutex_);
        address = addresses_[listeners_[index].address_index];
        type = listeners_[index].type;
    }
    if (address.port == 0) {
        auto port = pick_port(address);
        if (!port) return port.error();
        address.port = *port;
        std::lock_guard lock(mutex_);
        addresses_[listeners_[index].address_index].port = *port;
    }
    // Every worker's socket or none: a listener is served by all workers.
    std::vector<int> fds;
    for (size_t i = 0; i < workers_.size(); ++i) {
        auto fd = bind_socket(address, type);
        if (!fd) {
            for (int open : fds) ::close(open);
            return fd.error();
        }
        fds.push_back(*fd);
    }
    for (size_t i = 0; i < workers_.size(); ++i) {
        if (type == SOCK_STREAM) {
            workers_[i]->add_tcp(fds[i]);
        } else {
            workers_[i]->add_udp(fds[i]);
        }
    }
    return {};
}

bool Server::bind_pending(bool late) {
    bool all = true;
    bool bound_late = false;
    // listeners_'s size is fixed once start() made it: only entries change.
    for (size_t i = 0; i < listeners_.size(); ++i) {
        {
            std::lock_guard lock(mutex_);
            if (stopping_) return true;
            if (listeners_[i].serving) continue;
        }
        Status status = bind_listener(i);
        std::lock_guard lock(mutex_);
        Listener& listener = listeners_[i];
        const std::string name = state_of(listener).name();
        if (status) {
            listener.serving = true;
            listener.last_error.clear();
            if (listener.failures > 0) {
                log::info("dns: {} serving after {} failed binds", name, listener.failures);
            }
            bound_late = bound_late || late;
            continue;
        }
        all = false;
        ++listener.failures;
        listener.last_error = status.error().describe();
        if (listener.failures == 1) {
            // Once at warn: an address missing for hours must not flood the log.
            log::warn("dns: {}; retrying every {}s while the proxy runs", listener.last_error,
                      std::chrono::duration<double>(options_.bind_retry_interval).count());
        } else {
            log::debug("dns: {}: attempt {}: {}", name, listener.failures, listener.last_error);
        }
    }
    if (bound_late && options_.on_late_bind) run_guarded("dns late bind", options_.on_late_bind);
    return all;
}

void Server::retry_binds() {
    std::unique_lock lock(mutex_);
    while (!retry_cv_.wait_for(lock, options_.bind_retry_interval, [this] { return stopping_; })) {
        lock.unlock();
        bool all = bind_pending(true);
        lock.lock();
        if (all) return;
    }
}

void Server::stop() {
    if (stopped_) return;
    stopped_ = true;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    retry_cv_.notify_all();
    // No socket is added to a worker once the retry thread is gone.
    if (retry_thread_.joinable()) retry_thread_.join();
    for (auto& worker : workers_) worker->stop();
}

bool Server::serving() const {
    std::lock_guard lock(mutex_);
    return !listeners_.empty() && std::all_of(listeners_.begin(), listeners_.end(),
                                              [](const Listener& l) { return l.serving; });
}

std::vector<ListenerState> Server::listeners() const {
    std::lock_guard lock(mutex_);
    std::vector<ListenerState> out;
    for (const auto& listener : listeners_) out.push_back(state_of(listener));
    return out;
}

ListenerState Server::state_of(const Listener& listener) const {
    return ListenerState{addresses_[listener.address_index], listener.type == SOCK_STREAM,
                         listener.serving, listener.failures, listener.last_error};
}

std::vector<HostPort> Server::bound() const {
    std::lock_guard lock(mutex_);
    return addresses_;
}

std::string Server::metrics_server_label() const {
    return "dns://:" + std::to_string(options_.listen.empty() ? 53 : options_.listen[0].port);
}

void Server::append_metrics(metrics::TextWriter& out) const {
    uint64_t requests[2][2][ServerStats::kTypes] = {};
    uint64_t do_requests = 0;
    // [answerer][rcode]; the last answerer row is the forwarded replies.
    uint64_t responses[ServerStats::kAnswerers + 1][ServerStats::kRcodes] = {};
    uint64_t buckets[ServerStats::kBuckets.size() + 1] = {};
    double sum = 0;
    uint64_t truncated = 0;
    uint64_t tcp_rejected = 0;
    uint64_t tcp_evicted = 0;
    uint64_t tcp_timeouts = 0;
    uint64_t dropped = 0;
    uint64_t render_hits = 0;
    uint64_t render_bytes = 0;
    uint64_t render_flushes = 0;
    // [udp, tcp]: summed request and response sizes.
    struct SizeSums {
        uint64_t buckets[ServerStats::kSizeBuckets.size() + 1] = {};
        uint64_t sum = 0;
    } request_sizes[2], response_sizes[2];
    auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
    for (const auto& worker : workers_) {
        worker->for_each_stats([&](const ServerStats& s) {
            for (size_t p = 0; p < 2; ++p) {
                for (size_t f = 0; f < 2; ++f) {
                    for (size_t t = 0; t < ServerStats::kTypes; ++t)
                        requests[p][f][t] += get(s.requests[p][f][t]);
                }
            }
            for (size_t r = 0; r < ServerStats::kRcodes; ++r) {
                for (size_t a = 0; a < ServerStats::kAnswerers; ++a)
                    responses[a][r] += get(s.responses[a][r]);
                responses[ServerStats::kAnswerers][r] += get(s.forwarded_responses[r]);
            }
            for (const auto* h : {&s.duration, &s.forwarded_duration}) {
                for (size_t b = 0; b <= ServerStats::kBuckets.size(); ++b)
                    buckets[b] += get(h->buckets[b]);
                sum += h->sum.load(std::memory_order_relaxed);
            }
            do_requests += get(s.do_requests);
            truncated += get(s.truncated) + get(s.forwarded_truncated);
            tcp_rejected += get(s.tcp_rejected);
            tcp_evicted += get(s.tcp_evicted);
            tcp_timeouts += get(s.tcp_timeouts);
            dropped += get(s.dropped);
            render_hits += get(s.render_hits);
            render_bytes += get(s.render_bytes);
            render_flushes += get(s.render_flushes);
            for (size_t p = 0; p < 2; ++p) {
                auto add = [&](SizeSums& to, const ServerStats::SizeHistogram& from) {
                    for (size_t b = 0; b <= ServerStats::kSizeBuckets.size(); ++b)
                        to.buckets[b] += get(from.buckets[b]);
                    to.sum += get(from.sum);
                };
                add(request_sizes[p], s.request_size[p]);
                add(response_sizes[p], s.response_size[p]);
                add(response_sizes[p], s.forwarded_response_size[p]);
            }
        });
    }
    // CoreDNS's labels. One server block answers every name: zone ".", no
    // view; `server` is "dns://:PORT" of the first listen address, every
    // listener summed into it (docs/dns.md, "Metrics").
    const std::string server = metrics_server_label();
    const std::string zone = ".";
    const std::string view;
    using metrics::Type;
    out.family({"coredns_dns_requests_total",
                "Counter of DNS requests made per zone, protocol and family.",
                Type::kCounter,
                {"server", "zone", "view", "proto", "family", "type"}});
    for (size_t p = 0; p < 2; ++p) {
        for (size_t f = 0; f < 2; ++f) {
            for (size_t t = 0; t < ServerStats::kTypes; ++t) {
                out.sample({server, zone, view, p == 0 ? "udp" : "tcp", f == 0 ? "1" : "2",
                            type_name(kTypeOfIndex[t])},
                           requests[p][f][t]);
            }
        }
    }
    out.family({"coredns_dns_do_requests_total",
                "Counter of DNS requests with DO bit set per zone.",
                Type::kCounter,
                {"server", "zone", "view"}});
    out.sample({server, zone, view}, do_requests);
    out.family({"coredns_dns_responses_total",
                "Counter of response status codes.",
                Type::kCounter,
                {"server", "zone", "view", "rcode", "plugin"}});
    static constexpr const char* kPlugins[ServerStats::kAnswerers + 1] = {"kubernetes", "cache", "",
                                                                          "forward"};
    for (size_t a = 0; a <= ServerStats::kAnswerers; ++a) {
        for (size_t r = 0; r < ServerStats::kRcodes; ++r) {
            out.sample({server, zone, view, r < 6 ? to_string(static_cast<Rcode>(r)) : "other",
                        kPlugins[a]},
                       responses[a][r]);
        }
    }
    out.family({"coredns_dns_request_duration_seconds",
                "Histogram of the time (in seconds) each request took per zone.",
                Type::kHistogram,
                {"server", "zone", "view"}});
    out.histogram({server, zone, view},
                  metrics::HistogramData{ServerStats::kBuckets, buckets, sum});
    auto sizes = [&](metrics::Family family, const SizeSums(&per_proto)[2]) {
        out.family(family);
        for (size_t p = 0; p < 2; ++p) {
            out.histogram({server, zone, view, p == 0 ? "udp" : "tcp"},
                          metrics::HistogramData{ServerStats::kSizeBuckets, per_proto[p].buckets,
                                                 static_cast<double>(per_proto[p].sum)});
        }
    };
    // CoreDNS's help texts, word for word (its request size is the
    // request's length, whatever the help says).
    sizes({"coredns_dns_request_size_bytes",
           "Size of the EDNS0 UDP buffer in bytes (64K for TCP) per zone and protocol.",
           Type::kHistogram,
           {"server", "zone", "view", "proto"}},
          request_sizes);
    sizes({"coredns_dns_response_size_bytes",
           "Size of the returned response in bytes.",
           Type::kHistogram,
           {"server", "zone", "view", "proto"}},
          response_sizes);
    auto counter = [&out](const char* name, const char* help, uint64_t value) {
        out.family({name, help, Type::kCounter, {}});
        out.sample({}, value);
    };
    counter("switchboard_dns_truncated_total", "Replies sent with TC set.", truncated);
    counter("switchboard_dns_tcp_rejected_total",
            "TCP connections accepted and closed at once: no file descriptor was left.",
            tcp_rejected);
    counter("switchboard_dns_tcp_evictions_total",
            "TCP connections closed, least recently active first, to make room for a new one.",
            tcp_evicted);
    counter("switchboard_dns_tcp_timeouts_total",
            "TCP connections closed by the read or idle timeout.", tcp_timeouts);
    counter("switchboard_dns_render_cache_hits_total",
            "Zone replies served from a thread's rendered-reply cache.", render_hits);
    counter("switchboard_dns_render_cache_flushes_total",
            "Rendered-reply caches emptied because an insert would pass their bound.",
            render_flushes);
    out.family({"switchboard_dns_render_cache_bytes",
                "Bytes the serving threads' rendered-reply caches hold.",
                Type::kGauge,
                {}});
    out.sample({}, render_bytes);
    counter("switchboard_dns_dropped_total", "Packets not answered (responses, runts).", dropped);

    // Labelled by the listen address as configured, so that a port 0 keeps
    // one series before and after the kernel picks its port.
    std::lock_guard lock(mutex_);
    auto per_listener = [&](metrics::Family family, auto value) {
        out.family(family);
        for (const auto& listener : listeners_) {
            out.sample(
                {protocol_name(listener.type), options_.listen[listener.address_index].to_string()},
                value(listener));
        }
    };
    per_listener({"switchboard_dns_bind_failures_total",
                  "Binds of a DNS listener that failed (each is retried).",
                  Type::kCounter,
                  {"proto", "address"}},
                 [](const Listener& l) { return l.failures; });
    per_listener({"switchboard_dns_listener_up",
                  "1 when the DNS listener is bound and serving, else 0.",
                  Type::kGauge,
                  {"proto", "address"}},
                 [](const Listener& l) { return uint64_t{l.serving ? 1u : 0u}; });
}

}  // namespace sb::dns
