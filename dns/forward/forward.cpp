#include "dns/forward/forward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "base/log.h"
#include "base/socket_address.h"
#include "base/threads/panic_guard.h"
#include "base/threads/thread_name.h"
#include "dns/forward/upstream_exchange.h"

namespace sb::dns {

namespace {

// Upstream queries in flight, each with its own socket while over UDP:
// bounds the descriptors the forwarder holds.
constexpr size_t kMaxPending = 4096;
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr size_t kNoSet = SIZE_MAX;
constexpr uint64_t kWakeKey = UINT64_MAX;  // epoll data of the wake eventfd

void append_label(std::string& wire, std::string_view label) {
    wire.push_back(static_cast<char>(label.size()));
    wire.append(label);
}

// "<label>.<number>.<zone>" in wire form, as CoreDNS's loop plugin builds
// "<random>.<random>.<zone>": under the root, an all-digit top-level label
// no registry can delegate, so a forwarding resolver forwards it and the
// root answers NXDOMAIN. Empty when it would be over 255 bytes.
std::string probe_name(std::string_view label, uint64_t number, std::string_view zone) {
    std::string wire;
    append_label(wire, label);
    append_label(wire, std::to_string(number));
    wire.append(zone);
    return wire.size() <= kMaxNameLength ? wire : std::string();
}

std::string query_packet(uint16_t id, const Question& question) {
    Message query;
    query.header.id = id;
    query.header.rd = true;
    query.questions.push_back(question);
    query.edns = Edns{};
    return write_message(query).bytes;
}

// The answer to a query over a set's max_concurrent (CoreDNS's forward.go).
Message refused_reply(const Question& question) {
    Message reply;
    reply.header.qr = true;
    reply.header.rd = true;
    reply.header.ra = true;
    reply.header.rcode = static_cast<uint8_t>(Rcode::kRefused);
    reply.questions.push_back(question);
    return reply;
}

}  // namespace

Forwarder::Forwarder(ForwarderOptions options)
    : options_(std::move(options)), cap_(options_.max_outstanding_per_client) {
    auto add_set = [this](std::string zone, bool cluster_block,
                          const ForwardSetOptions& set_options,
                          const std::vector<HostPort>& addresses) {
        Set set;
        set.zone = std::move(zone);
        set.cluster_block = cluster_block;
        set.options = set_options;
        for (const auto& address : addresses) {
            set.members.push_back(upstreams_.size());
            Upstream upstream;
            upstream.address = address;
            upstream.set = sets_.size();
            for (const auto& tls : set_options.tls_upstreams) {
                if (set_options.tls && tls.address == address) {
                    upstream.tls = true;
                    upstream.tls_name = tls.server_name;
                }
            }
            upstreams_.push_back(upstream);
        }
        sets_.push_back(std::move(set));
    };
    add_set(name_lower(*name_from_text(".")), true, options_.options, options_.upstreams);
    for (const auto& stub : options_.stubs) {
        add_set(stub.zone, stub.cluster_block, stub.options, stub.upstreams);
    }
    for (size_t i = 0; i < sets_.size(); ++i) {
        if (sets_[i].cluster_block) cluster_sets_.push_back(i);
    }
    std::stable_sort(cluster_sets_.begin(), cluster_sets_.end(), [this](size_t a, size_t b) {
        return sets_[a].zone.size() > sets_[b].zone.size();
    });
    usable_ = upstreams_.size();
    // Probe names: one random first label for this forwarder (the server's
    // cheap test), one random number per upstream, under its set's zone.
    char token[17];
    std::snprintf(token, sizeof(token), "%016llx",
                  static_cast<unsigned long long>(random_.next64()));
    probe_label_ = std::string("sb-loop-") + token;
    for (auto& upstream : upstreams_) {
        upstream.probe = probe_name(probe_label_, random_.next64(), sets_[upstream.set].zone);
    }
    std::vector<HostPort> addresses;
    std::vector<UpstreamHealth::Target> targets;
    for (const auto& upstream : upstreams_) {
        const ForwardSetOptions& set_options = sets_[upstream.set].options;
        addresses.push_back(upstream.address);
        targets.push_back({upstream.address, set_options.protocol == UpstreamProtocol::kTcp,
                           upstream.tls ? set_options.tls.get() : nullptr, upstream.tls_name,
                           set_options.source, set_options.max_fails, set_options.health_check});
    }
    metrics_ = std::make_unique<ForwardMetrics>(addresses);
    health_ =
        std::make_unique<UpstreamHealth>(std::move(targets), *metrics_, options_.probe_timeout);
}

Forwarder::~Forwarder() {
    stop();
}

Status Forwarder::start() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) return make_error(ErrorCode::kIo, "epoll/eventfd", errno);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = kWakeKey;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &event);
    bool tcp_per_query = std::any_of(sets_.begin(), sets_.end(), [](const Set& set) {
        return !set.members.empty() && set.options.protocol != UpstreamProtocol::kUdp;
    });
    // The first probes are the owner's to send, once its server listens.
    next_loop_check_ = std::chrono::steady_clock::now() + options_.loop_check_interval;
    health_->start();
    thread_ = start_named_thread("sb-dns-forward", [this] { run(); });
    unsigned tcp_threads = options_.tcp_threads * (tcp_per_query ? 4 : 1);
    for (unsigned i = 0; i < tcp_threads; ++i) {
        tcp_threads_.push_back(start_named_thread("sb-dns-fwd-tcp", [this] { run_tcp(); }));
    }
    return {};
}

void Forwarder::stop() {
    if (stopping_.exchange(true)) return;
    if (wake_fd_ >= 0) {
        uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof(one));
    }
    // Through the mutex: a TCP thread between its predicate check and its
    // wait (one just started, say) would otherwise miss the notification
    // and never return, and stop() would wait for it for ever.
    { std::lock_guard lock(tcp_mutex_); }
    tcp_cv_.notify_all();
    // The loop completes every pending query on its way out; the TCP
    // threads' last results have no query left to complete.
    if (thread_.joinable()) thread_.join();
    for (auto& t : tcp_threads_) t.join();
    health_->stop();
    tcp_jobs_.clear();
    for (int* fd : {&epoll_fd_, &wake_fd_}) {
        if (*fd >= 0) ::close(*fd);
        *fd = -1;
    }
}

void Forwarder::drop_self(const std::vector<HostPort>& listen) {
    std::lock_guard lock(mutex_);
    for (auto& upstream : upstreams_) {
        for (const auto& own : listen) {
            bool same = upstream.address == own;
            bool wildcard = own.address.is_unspecified() && upstream.address.port == own.port &&
                            upstream.address.address.is_loopback() &&
                            upstream.address.address.family() == own.address.family();
            if ((same || wildcard) && !upstream.dropped) {
                upstream.dropped = true;
                --usable_;
                log::warn(
                    "dns: dropping upstream {}: it is our own listen address {} (a "
                    "forwarding loop)",
                    upstream.address, own);
            }
        }
    }
}

void Forwarder::send_loop_probes() {
    std::vector<std::pair<HostPort, std::string>> probes;
    {
        std::lock_guard lock(mutex_);
        for (const auto& upstream : upstreams_) {
            if (!upstream.dropped && !upstream.probe.empty()) {
                probes.emplace_back(upstream.address, upstream.probe);
            }
        }
    }
    for (const auto& [address, probe] : probes) {
        // Fire and forget: the answer does not matter, only whether the
        // probe comes back to one of our servers. The ID is 0: no reply is
        // ever matched to it.
        std::string packet = query_packet(0, Question{probe, type::kHINFO, kClassIN});
        SocketAddress to = to_socket_address(address);
        int fd = ::socket(to.sockaddr()->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        ::sendto(fd, packet.data(), packet.size(), 0, to.sockaddr(), to.length());
        ::close(fd);
    }
}

bool Forwarder::loop_detected(std::string_view lower_name) {
    // Every probe starts with probe_label_: other names skip the lock.
    if (name_first_label(lower_name) != probe_label_) return false;
    std::lock_guard lock(mutex_);
    for (auto& upstream : upstreams_) {
        if (upstream.probe != lower_name) continue;
        if (!upstream.dropped) {
            upstream.dropped = true;
            --usable_;
            log::warn(
                "dns: dropping upstream {}: our loop probe came back to us (a forwarding "
                "loop)",
                upstream.address);
        }
        return true;
    }
    return false;
}

void Forwarder::submit(const Question& question, Callback done, ClientProtocol protocol,
                       std::optional<IpAddress> client) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        if (!stopping_) {
            submissions_.push_back(Submission{question, std::move(done), protocol, client});
            done = nullptr;
        }
    }
    if (done) {
        complete(done, make_error(ErrorCode::kUnavailable, "forwarder stopped"));
        return;
    }
    uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof(one));
}

bool Forwarder::excepts(const Set& set, std::string_view lower_name) const {
    // CoreDNS's isAllowedDomain: FROM itself is always forwarded.
    if (lower_name == set.zone) return false;
    return std::any_of(set.options.except.begin(), set.options.except.end(),
                       [&](const std::string& zone) { return name_is_under(lower_name, zone); });
}

size_t Forwarder::set_for(std::string_view lower_name) const {
    // Another server block's zone first: CoreDNS picks the server block
    // before any plugin runs, and that block has no other forward to try.
    size_t block = kNoSet;
    for (size_t i = 1; i < sets_.size(); ++i) {
        const Set& set = sets_[i];
        if (set.cluster_block || !name_is_under(lower_name, set.zone)) continue;
        if (block == kNoSet || set.zone.size() > sets_[block].zone.size()) block = i;
    }
    if (block != kNoSet) return excepts(sets_[block], lower_name) ? kNoSet : block;
    // The kubernetes block's forwards, longest FROM first; the default set's
    // zone is the root, under which every name is.
    for (size_t candidate : cluster_sets_) {
        if (name_is_under(lower_name, sets_[candidate].zone) &&
            !excepts(sets_[candidate], lower_name)) {
            return candidate;
        }
    }
    return kNoSet;
}

unsigned Forwarder::max_attempts(size_t set) const {
    const uint32_t own = sets_[set].options.max_attempts;
    return own > 0 ? own : options_.max_attempts;
}

size_t Forwarder::usable_in(size_t set) const {
    // Caller holds mutex_.
    size_t usable = 0;
    for (size_t member : sets_[set].members) usable += upstreams_[member].dropped ? 0 : 1;
    return usable;
}

void Forwarder::complete(Callback& done, Result<Message> result) {
    if (!result.ok()) failures_.fetch_add(1, std::memory_order_relaxed);
    if (done) done(std::move(result));
}

void Forwarder::reject(Submission& submission, Result<Message> result) {
    if (submission.client) cap_.release(*submission.client);
    complete(submission.done, std::move(result));
}

void Forwarder::close_attempt_socket(Pending& pending) {
    if (pending.fd < 0) return;
    ::close(pending.fd);  // also leaves the epoll set
    pending.fd = -1;
}

void Forwarder::finish(PendingMap::iterator it, Result<Message> result) {
    Pending pending = std::move(it->second);
    pending_.erase(it);
    close_attempt_socket(pending);
    merging_.erase(pending.merge_key);
    --sets_[pending.set].in_flight;
    for (size_t i = 0; i < pending.waiters.size(); ++i) {
        Waiter& waiter = pending.waiters[i];
        if (waiter.client) cap_.release(*waiter.client);
        bool last = i + 1 == pending.waiters.size();
        complete(waiter.done, last ? std::move(result) : Result<Message>(result));
    }
}

void Forwarder::count_dropped(ReplyVerdict verdict) {
    dropped_[static_cast<size_t>(verdict)].fetch_add(1, std::memory_order_relaxed);
}

void Forwarder::start_query(Submission submission) {
    std::string lower = name_lower(submission.question.name);
    const size_t s = set_for(lower);
    if (s == kNoSet) {
        complete(submission.done,
                 make_error(ErrorCode::kUnavailable,
                            fmt::format("{} is excepted from forwarding and no other forward "
                                        "takes it",
                                        name_to_text(submission.question.name))));
        return;
    }
    if (submission.client && !cap_.acquire(*submission.client)) {
        // REFUSED as over max_concurrent: a refusal by policy, which a stub
        // resolver answers by asking its next server; a SERVFAIL would read
        // as the name failing and may be cached (RFC 2308 7.1).
        client_rejected_.fetch_add(1, std::memory_order_relaxed);
        complete(submission.done, refused_reply(submission.question));
        return;
    }
    const bool client_tcp = submission.protocol == ClientProtocol::kTcp;
    // The upstream query depends on nothing else: we never set DO or CD.
    std::string merge_key = std::to_string(s) + (client_tcp ? "t" : "u") +
                            std::to_string(submission.question.qtype) + "/" +
                            std::to_string(submission.question.qclass) + "/" + lower;
    if (auto shared = merging_.find(merge_key); shared != merging_.end()) {
        merged_.fetch_add(1, std::memory_order_relaxed);
        pending_.at(shared->second)
            .waiters.push_back(Waiter{std::move(submission.done), submission.client});
        return;
    }
    Set& set = sets_[s];
    if (set.options.max_concurrent > 0 && set.in_flight >= set.options.max_concurrent) {
        metrics_->max_concurrent_rejected();
        reject(submission, refused_reply(submission.question));
        return;
    }
    ++set.turns;
    std::vector<size_t> order;
    {
        std::lock_guard lock(mutex_);
        auto positions = upstream_order(set.options.policy, set.members.size(), set.turns,
                                        set.preferred, [this] { return random_.next64(); });
        for (size_t position : positions) {
            size_t member = set.members[position];
            if (!upstreams_[member].dropped) order.push_back(member);
        }
    }
    if (order.empty() || pending_.size() >= kMaxPending) {
        reject(submission, make_error(ErrorCode::kUnavailable, "no upstream available"));
        return;
    }
    const uint64_t key = next_key_++;
    Pending& pending = pending_[key];
    pending.question = std::move(submission.question);
    pending.lower_name = std::move(lower);
    pending.merge_key = merge_key;
    pending.waiters.push_back(Waiter{std::move(submission.done), submission.client});
    pending.packet = query_packet(0, pending.question);
    pending.set = s;
    pending.order = std::move(order);
    pending.client_tcp = client_tcp;
    merging_.emplace(std::move(merge_key), key);
    ++set.in_flight;
    send_attempt(key, pending);
}

void Forwarder::send_attempt(uint64_t key, Pending& pending) {
    UpstreamPick pick = pick_upstream(
        pending.order, pending.position,
        [this](size_t upstream) { return health_->down(upstream); }, random_.next64());
    if (pick.all_down) {
        metrics_->health_check_broken();
        if (sets_[pending.set].options.failfast_all_down) {
            finish(pending_.find(key),
                   make_error(ErrorCode::kUnavailable, "every upstream is down (failfast)"));
            return;
        }
    }
    pending.upstream = pick.index;
    pending.position = pick.next_position;
    ++pending.attempts;
    const UpstreamProtocol protocol = sets_[pending.set].options.protocol;
    bool tcp = upstreams_[pick.index].tls || protocol == UpstreamProtocol::kTcp ||
               (protocol == UpstreamProtocol::kClient && pending.client_tcp);
    dispatch(key, pending, tcp);
}

void Forwarder::dispatch(uint64_t key, Pending& pending, bool tcp) {
    HostPort address;
    bool tls = false;
    std::string tls_name;
    {
        std::lock_guard lock(mutex_);
        const Upstream& upstream = upstreams_[pending.upstream];
        address = upstream.address;
        tls = upstream.tls;
        tls_name = upstream.tls_name;
    }
    const ForwardSetOptions& set_options = sets_[pending.set].options;
    const auto attempt_timeout = set_options.read_timeout.value_or(options_.attempt_timeout);
    const auto tcp_timeout = set_options.read_timeout.value_or(options_.tcp_timeout);
    // Every attempt: a fresh ID, and (UDP) a fresh socket, so a reply to an
    // earlier attempt or a guess aimed at it cannot complete this one.
    close_attempt_socket(pending);
    pending.id = random_.next16();
    pending.packet[0] = static_cast<char>(pending.id >> 8);
    pending.packet[1] = static_cast<char>(pending.id & 0xff);
    auto now = std::chrono::steady_clock::now();
    pending.sent = now;
    pending.tcp = tcp;
    if (tcp) {
        // The TCP thread reports first; the deadline is for a thread pool
        // too busy to start the exchange in time.
        pending.deadline = now + tcp_timeout + attempt_timeout;
        {
            std::lock_guard lock(tcp_mutex_);
            tcp_jobs_.push_back(TcpJob{key, pending.attempts, pending.packet, address,
                                       tls ? set_options.tls.get() : nullptr, tls_name,
                                       set_options.source, tcp_timeout});
        }
        tcp_cv_.notify_one();
        return;
    }
    pending.deadline = now + attempt_timeout;
    SocketAddress to = to_socket_address(address);
    // connect(): the kernel picks a random ephemeral port and delivers only
    // the upstream's datagrams (and its ICMP errors) to this socket.
    int fd = ::socket(to.sockaddr()->sa_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = key;
    std::optional<SocketAddress> local;
    if (set_options.source) local = to_socket_address(HostPort{*set_options.source, 0});
    if (fd < 0 || (local && ::bind(fd, local->sockaddr(), local->length()) < 0) ||
        ::connect(fd, to.sockaddr(), to.length()) < 0 ||
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) < 0 ||
        ::send(fd, pending.packet.data(), pending.packet.size(), 0) < 0) {
        if (fd >= 0) ::close(fd);
        errors_.fetch_add(1, std::memory_order_relaxed);
        // The deadline scan retries it; an immediate retry could spin.
        pending.deadline = now;
        return;
    }
    pending.fd = fd;
}

void Forwarder::attempt_failed(uint64_t key, const char* reason) {
    auto it = pending_.find(key);
    if (it == pending_.end()) return;
    health_->exchange_failed(it->second.upstream);
    retry_or_fail(key, reason);
}

void Forwarder::retry_or_fail(uint64_t key, const char* reason) {
    auto it = pending_.find(key);
    if (it == pending_.end()) return;
    Pending& pending = it->second;
    bool retry = false;
    {
        std::lock_guard lock(mutex_);
        retry = pending.attempts < max_attempts(pending.set) && usable_in(pending.set) > 0;
    }
    if (retry) {
        send_attempt(key, pending);
        return;
    }
    finish(it, make_error(ErrorCode::kUnavailable,
                          fmt::format("no upstream answered {}: {}",
                                      name_to_text(pending.question.name), reason)));
}

void Forwarder::replied(uint64_t key, Message reply) {
    auto it = pending_.find(key);
    if (it == pending_.end()) return;
    Pending& pending = it->second;
    metrics_->replied(
        pending.upstream, reply.header.rcode,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - pending.sent).count());
    if (reply.header.tc && !pending.tcp) {
        // The same upstream over TCP: the whole answer for the client and
        // the cache (CoreDNS does this with prefer_udp only).
        tcp_retries_.fetch_add(1, std::memory_order_relaxed);
        dispatch(key, pending, true);
        return;
    }
    auto rcode = static_cast<Rcode>(reply.header.rcode);
    size_t usable_in_set = 0;
    {
        std::lock_guard lock(mutex_);
        usable_in_set = usable_in(pending.set);
    }
    const auto& failover = sets_[pending.set].options.failover_rcodes;
    if (std::find(failover.begin(), failover.end(), reply.header.rcode) != failover.end() &&
        pending.attempts < max_attempts(pending.set) && usable_in_set > 1) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        retry_or_fail(key, to_string(rcode));
        return;
    }
    Set& set = sets_[pending.set];
    auto member = std::find(set.members.begin(), set.members.end(), pending.upstream);
    set.preferred = static_cast<size_t>(member - set.members.begin());
    finish(it, std::move(reply));
}

void Forwarder::handle_reply(uint64_t key) {
    auto it = pending_.find(key);
    // Gone, or moved on to TCP or another attempt's socket: an event of a
    // socket closed in this batch.
    if (it == pending_.end() || it->second.fd < 0) return;
    const Pending& pending = it->second;
    const ExpectedReply expected{pending.id, pending.lower_name, pending.question.qtype,
                                 pending.question.qclass};
    uint8_t buffer[65536];
    while (true) {
        ssize_t n = ::recv(pending.fd, buffer, sizeof(buffer), 0);
        if (n < 0) {
            // ICMP port unreachable (connected socket): no server there.
            if (errno == ECONNREFUSED) {
                errors_.fetch_add(1, std::memory_order_relaxed);
                attempt_failed(key, "port unreachable");
            }
            return;
        }
        CheckedReply checked = check_upstream_reply(
            std::span<const uint8_t>(buffer, static_cast<size_t>(n)), expected);
        if (checked.verdict != ReplyVerdict::kAccepted) {
            count_dropped(checked.verdict);
            continue;
        }
        replied(key, std::move(*checked.message));
        return;
    }
}

void Forwarder::handle_tcp_results() {
    std::deque<TcpResult> results;
    {
        std::lock_guard lock(mutex_);
        results.swap(tcp_results_);
    }
    for (auto& result : results) {
        auto it = pending_.find(result.key);
        // Gone, or its deadline passed and another attempt runs now.
        if (it == pending_.end() || !it->second.tcp || it->second.attempts != result.attempt) {
            continue;
        }
        if (!result.reply) {
            errors_.fetch_add(1, std::memory_order_relaxed);
            attempt_failed(result.key, "TCP failed");
            continue;
        }
        const Pending& pending = it->second;
        ReplyVerdict verdict = check_upstream_reply(
            *result.reply, ExpectedReply{pending.id, pending.lower_name, pending.question.qtype,
                                         pending.question.qclass});
        if (verdict == ReplyVerdict::kAccepted) {
            replied(result.key, std::move(*result.reply));
            continue;
        }
        // One connection carries one exchange: a wrong reply ends the attempt.
        count_dropped(verdict);
        attempt_failed(result.key, "TCP reply for another query");
    }
}

void Forwarder::run() {
    epoll_event events[64];
    while (!stopping_) {
        int n = ::epoll_wait(epoll_fd_, events, 64, static_cast<int>(kTick.count()));
        for (int i = 0; i < n; ++i) {
            uint64_t key = events[i].data.u64;
            if (key == kWakeKey) {
                uint64_t value = 0;
                (void)!::read(wake_fd_, &value, sizeof(value));
            } else {
                // Each unit of work guarded (coredns_panics_total): an
                // exception costs that reply or query, never the thread.
                run_guarded("dns forwarder reply", [&] { handle_reply(key); });
            }
        }
        run_guarded("dns forwarder TCP results", [&] { handle_tcp_results(); });
        std::deque<Submission> submissions;
        {
            std::lock_guard lock(mutex_);
            submissions.swap(submissions_);
        }
        for (auto& submission : submissions) {
            run_guarded("dns forwarder query", [&] { start_query(std::move(submission)); });
        }
        auto now = std::chrono::steady_clock::now();
        std::vector<uint64_t> expired;
        for (const auto& [key, pending] : pending_) {
            if (pending.deadline <= now) expired.push_back(key);
        }
        for (uint64_t key : expired) {
            timeouts_.fetch_add(1, std::memory_order_relaxed);
            run_guarded("dns forwarder timeout", [&] { attempt_failed(key, "timeout"); });
        }
        if (now >= next_loop_check_) {
            next_loop_check_ = now + options_.loop_check_interval;
            run_guarded("dns forwarder loop probes", [&] { send_loop_probes(); });
        }
    }
    while (!pending_.empty()) {
        finish(pending_.begin(), make_error(ErrorCode::kUnavailable, "forwarder stopped"));
    }
    std::deque<Submission> submissions;
    {
        std::lock_guard lock(mutex_);
        submissions.swap(submissions_);
    }
    for (auto& submission : submissions) {
        complete(submission.done, make_error(ErrorCode::kUnavailable, "forwarder stopped"));
    }
}

void Forwarder::run_tcp() {
    while (true) {
        TcpJob job;
        {
            std::unique_lock lock(tcp_mutex_);
            tcp_cv_.wait(lock, [this] { return stopping_ || !tcp_jobs_.empty(); });
            if (stopping_) return;
            job = std::move(tcp_jobs_.front());
            tcp_jobs_.pop_front();
        }
        TcpResult result{job.key, job.attempt,
                         make_error(ErrorCode::kIo, "TCP exchange failed unexpectedly")};
        run_guarded("dns forwarder TCP exchange", [&] {
            result.reply = job.tls
                               ? job.tls->exchange(job.upstream, job.tls_name, job.packet,
                                                   job.timeout, job.source)
                               : tcp_exchange(job.upstream, job.packet, job.timeout, job.source);
        });
        {
            std::lock_guard lock(mutex_);
            tcp_results_.push_back(std::move(result));
        }
        uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof(one));
    }
}

void Forwarder::append_metrics(metrics::TextWriter& out) const {
    using metrics::Type;
    metrics_->append(out);
    out.family({"switchboard_dns_forward_queries_total",
                "Names handed to the forwarder.",
                Type::kCounter,
                {}});
    out.sample({}, requests_.load());
    out.family({"switchboard_dns_upstream_errors_total",
                "Upstream failures by kind.",
                Type::kCounter,
                {"kind"}});
    out.sample({"timeout"}, timeouts_.load());
    out.sample({"error"}, errors_.load());
    out.sample({"exhausted"}, failures_.load());
    out.family({"switchboard_dns_forward_replies_dropped_total",
                "Upstream replies dropped: unparsable, QR=0, another ID or another question.",
                Type::kCounter,
                {"reason"}});
    for (size_t v = 1; v < kReplyVerdicts; ++v) {
        out.sample({reason_label(static_cast<ReplyVerdict>(v))}, dropped_[v].load());
    }
    out.family({"switchboard_dns_forward_merged_total",
                "Queries answered by an identical question's upstream query in flight.",
                Type::kCounter,
                {}});
    out.sample({}, merged_.load());
    out.family({"switchboard_dns_forward_client_limit_rejected_total",
                "Queries REFUSED: their client had max_outstanding_per_client waiting.",
                Type::kCounter,
                {}});
    out.sample({}, client_rejected_.load());
    out.family({"switchboard_dns_forward_tcp_retries_total",
                "Truncated upstream replies retried over TCP.",
                Type::kCounter,
                {}});
    out.sample({}, tcp_retries_.load());
    std::lock_guard lock(mutex_);
    uint64_t usable = 0;
    for (const auto& upstream : upstreams_) usable += upstream.dropped ? 0 : 1;
    out.family({"switchboard_dns_upstreams", "Usable upstream servers.", Type::kGauge, {}});
    out.sample({}, usable);
}

}  // namespace sb::dns
