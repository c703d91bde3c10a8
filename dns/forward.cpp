#include "dns/forward.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/log.h"
#include "dns/panic_guard.h"
#include "dns/socket_util.h"
#include "dns/upstream_exchange.h"

namespace sb::dns {

namespace {

constexpr size_t kMaxPending = 60000;
// RFC 6761 .invalid: a probe can never be a real name.
constexpr const char* kProbeDomain = "switchboard.invalid";
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr size_t kNoSet = SIZE_MAX;

bool same_question(const Message& reply, const Question& question) {
    return reply.questions.size() == 1 && reply.questions[0].qtype == question.qtype &&
           reply.questions[0].qclass == question.qclass &&
           name_lower(reply.questions[0].name) == name_lower(question.name);
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

Forwarder::Forwarder(ForwarderOptions options) : options_(std::move(options)) {
    uint64_t seed = 0;
    if (::getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) seed = 0x9e3779b97f4a7c15ull;
    random_state_ = seed | 1;
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
    std::vector<HostPort> addresses;
    std::vector<UpstreamHealth::Target> targets;
    for (const auto& upstream : upstreams_) {
        const ForwardSetOptions& set_options = sets_[upstream.set].options;
        addresses.push_back(upstream.address);
        targets.push_back({upstream.address, set_options.protocol == UpstreamProtocol::kTcp,
                           set_options.max_fails, set_options.health_check});
    }
    metrics_ = std::make_unique<ForwardMetrics>(addresses);
    health_ =
        std::make_unique<UpstreamHealth>(std::move(targets), *metrics_, options_.probe_timeout);
}

Forwarder::~Forwarder() {
    stop();
}

uint64_t Forwarder::next_random() {
    // xorshift64*: IDs must be unpredictable enough that an off-path sender
    // cannot guess them together with our source port.
    random_state_ ^= random_state_ >> 12;
    random_state_ ^= random_state_ << 25;
    random_state_ ^= random_state_ >> 27;
    return random_state_ * 0x2545F4914F6CDD1Dull;
}

uint16_t Forwarder::new_id() {
    return static_cast<uint16_t>(next_random() >> 48);
}

Status Forwarder::start() {
    epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd_ < 0 || wake_fd_ < 0) return make_error(ErrorCode::kIo, "epoll/eventfd", errno);
    auto watch = [this](int fd) {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = fd;
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
    };
    watch(wake_fd_);
    for (int family : {AF_INET, AF_INET6}) {
        int fd = ::socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            if (family == AF_INET) return make_error(ErrorCode::kIo, "upstream socket", errno);
            continue;  // no IPv6 on this host: IPv6 upstreams will fail over
        }
        (family == AF_INET ? udp4_fd_ : udp6_fd_) = fd;
        watch(fd);
    }
    // Probe names: a random label per run, one name per upstream.
    {
        std::lock_guard lock(mutex_);
        uint64_t token = static_cast<uint64_t>(new_id()) << 32 | new_id() << 16 | new_id();
        for (size_t i = 0; i < upstreams_.size(); ++i) {
            std::string text =
                "sb-loop-" + std::to_string(token) + "-" + std::to_string(i) + "." + kProbeDomain;
            upstreams_[i].probe = name_lower(*name_from_text(text));
        }
    }
    bool tcp_per_query = std::any_of(sets_.begin(), sets_.end(), [](const Set& set) {
        return !set.members.empty() && set.options.protocol != UpstreamProtocol::kUdp;
    });
    health_->start();
    thread_ = std::thread([this] { run(); });
    unsigned tcp_threads = options_.tcp_threads * (tcp_per_query ? 4 : 1);
    for (unsigned i = 0; i < tcp_threads; ++i) {
        tcp_threads_.emplace_back([this] { run_tcp(); });
    }
    return {};
}

void Forwarder::stop() {
    if (stopping_.exchange(true)) return;
    if (wake_fd_ >= 0) {
        uint64_t one = 1;
        (void)!::write(wake_fd_, &one, sizeof(one));
    }
    tcp_cv_.notify_all();
    // The loop completes every pending query on its way out; the TCP
    // threads' last results have no query left to complete.
    if (thread_.joinable()) thread_.join();
    for (auto& t : tcp_threads_) t.join();
    health_->stop();
    tcp_jobs_.clear();
    for (int* fd : {&epoll_fd_, &wake_fd_, &udp4_fd_, &udp6_fd_}) {
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
                    upstream.address.to_string(), own.to_string());
            }
        }
    }
}

void Forwarder::send_loop_probes() {
    std::vector<std::pair<HostPort, std::string>> probes;
    {
        std::lock_guard lock(mutex_);
        for (const auto& upstream : upstreams_) {
            if (!upstream.dropped) probes.emplace_back(upstream.address, upstream.probe);
        }
    }
    for (const auto& [address, probe] : probes) {
        Question question{probe, type::kHINFO, kClassIN};
        std::string packet = query_packet(0, question);
        int fd = socket_for(address);
        if (fd < 0) continue;
        SocketAddress to = to_socket_address(address);
        ::sendto(fd, packet.data(), packet.size(), 0, to.sockaddr(), to.length());
    }
}

bool Forwarder::loop_detected(std::string_view lower_name) {
    // Every probe ends in "switchboard.invalid": other names skip the lock.
    static const std::string suffix = *name_from_text(kProbeDomain);
    if (!name_is_under(lower_name, suffix)) return false;
    std::lock_guard lock(mutex_);
    for (auto& upstream : upstreams_) {
        if (upstream.probe != lower_name) continue;
        if (!upstream.dropped) {
            upstream.dropped = true;
            --usable_;
            log::warn(
                "dns: dropping upstream {}: our loop probe came back to us (a forwarding "
                "loop)",
                upstream.address.to_string());
        }
        return true;
    }
    return false;
}

void Forwarder::submit(const Question& question, Callback done, ClientProtocol client) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        if (!stopping_) {
            submissions_.push_back(Submission{question, std::move(done), client});
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

int Forwarder::socket_for(const HostPort& upstream) const {
    return upstream.address.is_v4() ? udp4_fd_ : udp6_fd_;
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

void Forwarder::finish(std::map<uint16_t, Pending>::iterator it, Result<Message> result) {
    Callback done = std::move(it->second.done);
    --sets_[it->second.set].in_flight;
    pending_.erase(it);
    complete(done, std::move(result));
}

void Forwarder::start_query(Submission submission) {
    const size_t s = set_for(name_lower(submission.question.name));
    if (s == kNoSet) {
        complete(submission.done,
                 make_error(ErrorCode::kUnavailable,
                            name_to_text(submission.question.name) +
                                " is excepted from forwarding and no other forward takes it"));
        return;
    }
    Set& set = sets_[s];
    if (set.options.max_concurrent > 0 && set.in_flight >= set.options.max_concurrent) {
        metrics_->max_concurrent_rejected();
        complete(submission.done, refused_reply(submission.question));
        return;
    }
    ++set.turns;
    std::vector<size_t> order;
    {
        std::lock_guard lock(mutex_);
        auto positions = upstream_order(set.options.policy, set.members.size(), set.turns,
                                        set.preferred, [this] { return next_random(); });
        for (size_t position : positions) {
            size_t member = set.members[position];
            if (!upstreams_[member].dropped) order.push_back(member);
        }
    }
    if (order.empty() || pending_.size() >= kMaxPending) {
        complete(submission.done, make_error(ErrorCode::kUnavailable, "no upstream available"));
        return;
    }
    uint16_t id = new_id();
    while (pending_.count(id)) id = new_id();
    Pending& pending = pending_[id];
    pending.question = std::move(submission.question);
    pending.packet = query_packet(id, pending.question);
    pending.done = std::move(submission.done);
    pending.set = s;
    pending.order = std::move(order);
    pending.client_tcp = submission.client == ClientProtocol::kTcp;
    ++set.in_flight;
    send_attempt(id, pending);
}

void Forwarder::send_attempt(uint16_t id, Pending& pending) {
    UpstreamPick pick = pick_upstream(
        pending.order, pending.position,
        [this](size_t upstream) { return health_->down(upstream); }, next_random());
    if (pick.all_down) metrics_->health_check_broken();
    pending.upstream = pick.index;
    pending.position = pick.next_position;
    ++pending.attempts;
    const UpstreamProtocol protocol = sets_[pending.set].options.protocol;
    bool tcp = protocol == UpstreamProtocol::kTcp ||
               (protocol == UpstreamProtocol::kClient && pending.client_tcp);
    dispatch(id, pending, tcp);
}

void Forwarder::dispatch(uint16_t id, Pending& pending, bool tcp) {
    HostPort address;
    {
        std::lock_guard lock(mutex_);
        address = upstreams_[pending.upstream].address;
    }
    auto now = std::chrono::steady_clock::now();
    pending.sent = now;
    pending.tcp = tcp;
    if (tcp) {
        // The TCP thread reports first; the deadline is for a thread pool
        // too busy to start the exchange in time.
        pending.deadline = now + options_.tcp_timeout + options_.attempt_timeout;
        {
            std::lock_guard lock(tcp_mutex_);
            tcp_jobs_.push_back(TcpJob{id, pending.attempts, pending.packet, address});
        }
        tcp_cv_.notify_one();
        return;
    }
    pending.deadline = now + options_.attempt_timeout;
    int fd = socket_for(address);
    SocketAddress to = to_socket_address(address);
    if (fd < 0 || ::sendto(fd, pending.packet.data(), pending.packet.size(), 0, to.sockaddr(),
                           to.length()) < 0) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        // The deadline scan retries it; an immediate retry could spin.
        pending.deadline = now;
    }
}

void Forwarder::attempt_failed(uint16_t id, const char* reason) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    health_->exchange_failed(it->second.upstream);
    retry_or_fail(id, reason);
}

void Forwarder::retry_or_fail(uint16_t id, const char* reason) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending& pending = it->second;
    bool retry = false;
    {
        std::lock_guard lock(mutex_);
        retry = pending.attempts < options_.max_attempts && usable_in(pending.set) > 0;
    }
    if (retry) {
        send_attempt(id, pending);
        return;
    }
    std::string name = name_to_text(pending.question.name);
    finish(it, make_error(ErrorCode::kUnavailable,
                          std::string("no upstream answered ") + name + ": " + reason));
}

void Forwarder::replied(uint16_t id, Message reply) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending& pending = it->second;
    metrics_->replied(
        pending.upstream, reply.header.rcode,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - pending.sent).count());
    if (reply.header.tc && !pending.tcp) {
        // The same upstream over TCP: the whole answer for the client and
        // the cache (CoreDNS does this with prefer_udp only).
        tcp_retries_.fetch_add(1, std::memory_order_relaxed);
        dispatch(id, pending, true);
        return;
    }
    auto rcode = static_cast<Rcode>(reply.header.rcode);
    size_t usable_in_set = 0;
    {
        std::lock_guard lock(mutex_);
        usable_in_set = usable_in(pending.set);
    }
    if ((rcode == Rcode::kServFail || rcode == Rcode::kRefused) &&
        sets_[pending.set].options.next_on_servfail && pending.attempts < options_.max_attempts &&
        usable_in_set > 1) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        retry_or_fail(id, to_string(rcode));
        return;
    }
    Set& set = sets_[pending.set];
    auto member = std::find(set.members.begin(), set.members.end(), pending.upstream);
    set.preferred = static_cast<size_t>(member - set.members.begin());
    finish(it, std::move(reply));
}

void Forwarder::handle_reply(int fd) {
    uint8_t buffer[65536];
    while (true) {
        sockaddr_storage from{};
        socklen_t from_length = sizeof(from);
        ssize_t n = ::recvfrom(fd, buffer, sizeof(buffer), 0, reinterpret_cast<sockaddr*>(&from),
                               &from_length);
        if (n < 0) return;
        auto reply = parse_message(std::span<const uint8_t>(buffer, static_cast<size_t>(n)));
        if (!reply) {
            errors_.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        auto it = pending_.find(reply->header.id);
        if (it == pending_.end() || it->second.tcp) continue;  // late, a probe's answer, or spoofed
        HostPort upstream;
        {
            std::lock_guard lock(mutex_);
            upstream = upstreams_[it->second.upstream].address;
        }
        if (!(from_socket_address(from) == upstream) ||
            !same_question(*reply, it->second.question)) {
            continue;
        }
        replied(reply->header.id, std::move(*reply));
    }
}

void Forwarder::handle_tcp_results() {
    std::deque<TcpResult> results;
    {
        std::lock_guard lock(mutex_);
        results.swap(tcp_results_);
    }
    for (auto& result : results) {
        auto it = pending_.find(result.id);
        // Gone, or its deadline passed and another attempt runs now.
        if (it == pending_.end() || !it->second.tcp || it->second.attempts != result.attempt) {
            continue;
        }
        if (result.reply && same_question(*result.reply, it->second.question)) {
            replied(result.id, std::move(*result.reply));
            continue;
        }
        errors_.fetch_add(1, std::memory_order_relaxed);
        attempt_failed(result.id, result.reply ? "TCP reply for another question" : "TCP failed");
    }
}

void Forwarder::run() {
    epoll_event events[8];
    while (!stopping_) {
        int n = ::epoll_wait(epoll_fd_, events, 8, static_cast<int>(kTick.count()));
        for (int i = 0; i < n; ++i) {
            int fd = events[i].data.fd;
            if (fd == wake_fd_) {
                uint64_t value = 0;
                (void)!::read(wake_fd_, &value, sizeof(value));
            } else {
                // Each unit of work guarded (coredns_panics_total): an
                // exception costs that reply or query, never the thread.
                run_guarded("dns forwarder reply", [&] { handle_reply(fd); });
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
        std::vector<uint16_t> expired;
        for (const auto& [id, pending] : pending_) {
            if (pending.deadline <= now) expired.push_back(id);
        }
        for (uint16_t id : expired) {
            timeouts_.fetch_add(1, std::memory_order_relaxed);
            run_guarded("dns forwarder timeout", [&] { attempt_failed(id, "timeout"); });
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
        TcpResult result{job.id, job.attempt,
                         make_error(ErrorCode::kIo, "TCP exchange failed unexpectedly")};
        run_guarded("dns forwarder TCP exchange", [&] {
            result.reply = tcp_exchange(job.upstream, job.packet, options_.tcp_timeout);
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
