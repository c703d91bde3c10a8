#include "dns/forward.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "dns/socket_util.h"

namespace sb::dns {

namespace {

constexpr size_t kMaxPending = 60000;
// RFC 6761 .invalid: a probe can never be a real name.
constexpr const char* kProbeDomain = "switchboard.invalid";
constexpr auto kTcpTimeout = std::chrono::milliseconds(2000);
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr size_t kNoUpstream = SIZE_MAX;

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

// Blocking TCP exchange with one overall deadline.
Result<Message> tcp_exchange(const HostPort& upstream, const std::string& packet) {
    SocketAddress address = to_socket_address(upstream);
    int fd = ::socket(address.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(ErrorCode::kIo, "socket", errno);
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    auto deadline = std::chrono::steady_clock::now() + kTcpTimeout;
    auto wait = [&](short events) -> bool {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        pollfd p{fd, events, 0};
        return ::poll(&p, 1, static_cast<int>(left.count())) == 1;
    };
    if (::connect(fd, address.sockaddr(), address.length()) != 0 && errno != EINPROGRESS) {
        return make_error(ErrorCode::kUnavailable, "connect to " + upstream.to_string(), errno);
    }
    if (!wait(POLLOUT)) return make_error(ErrorCode::kUnavailable, "TCP connect timeout");
    int error = 0;
    socklen_t length = sizeof(error);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error != 0) {
        return make_error(ErrorCode::kUnavailable, "connect to " + upstream.to_string(), error);
    }
    std::string framed;
    framed.push_back(static_cast<char>(packet.size() >> 8));
    framed.push_back(static_cast<char>(packet.size() & 0xff));
    framed += packet;
    size_t sent = 0;
    while (sent < framed.size()) {
        ssize_t n = ::send(fd, framed.data() + sent, framed.size() - sent, MSG_NOSIGNAL);
        if (n > 0) {
            sent += static_cast<size_t>(n);
        } else if (n < 0 && errno == EAGAIN) {
            if (!wait(POLLOUT)) return make_error(ErrorCode::kUnavailable, "TCP send timeout");
        } else {
            return make_error(ErrorCode::kUnavailable, "TCP send", errno);
        }
    }
    std::string in;
    size_t want = 2;
    while (in.size() < want) {
        char buffer[4096];
        ssize_t n = ::recv(fd, buffer, std::min(sizeof(buffer), want - in.size()), 0);
        if (n > 0) {
            in.append(buffer, static_cast<size_t>(n));
            if (want == 2 && in.size() == 2) {
                want = 2 + ((static_cast<uint8_t>(in[0]) << 8) | static_cast<uint8_t>(in[1]));
            }
        } else if (n < 0 && errno == EAGAIN) {
            if (!wait(POLLIN)) return make_error(ErrorCode::kUnavailable, "TCP reply timeout");
        } else {
            return make_error(ErrorCode::kUnavailable, "TCP connection closed early", errno);
        }
    }
    auto bytes =
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(in.data()) + 2, in.size() - 2);
    return parse_message(bytes);
}

}  // namespace

std::vector<HostPort> resolv_conf_nameservers(const std::string& path) {
    std::vector<HostPort> result;
    std::ifstream file(path);
    std::string line;
    while (std::getline(file, line)) {
        std::istringstream words(line);
        std::string keyword;
        std::string value;
        if (!(words >> keyword >> value) || keyword != "nameserver") continue;
        // A zone index (fe80::1%eth0) cannot be expressed by IpAddress.
        if (value.find('%') != std::string::npos) continue;
        auto address = IpAddress::parse(value);
        if (address) result.push_back(HostPort{*address, 53});
    }
    return result;
}

Forwarder::Forwarder(ForwarderOptions options) : options_(std::move(options)) {
    uint64_t seed = 0;
    if (::getrandom(&seed, sizeof(seed), 0) != sizeof(seed)) seed = 0x9e3779b97f4a7c15ull;
    random_state_ = seed | 1;
    auto add_set = [this](const std::vector<HostPort>& addresses) {
        size_t set = preferred_.size();
        preferred_.push_back(addresses.empty() ? kNoUpstream : upstreams_.size());
        for (const auto& address : addresses) {
            Upstream upstream;
            upstream.address = address;
            upstream.set = set;
            upstreams_.push_back(upstream);
        }
    };
    add_set(options_.upstreams);
    for (const auto& stub : options_.stubs) add_set(stub.upstreams);
    usable_ = upstreams_.size();
}

Forwarder::~Forwarder() {
    stop();
}

uint16_t Forwarder::new_id() {
    // xorshift64*: IDs must be unpredictable enough that an off-path sender
    // cannot guess them together with our source port.
    random_state_ ^= random_state_ >> 12;
    random_state_ ^= random_state_ << 25;
    random_state_ ^= random_state_ >> 27;
    return static_cast<uint16_t>((random_state_ * 0x2545F4914F6CDD1Dull) >> 48);
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
    thread_ = std::thread([this] { run(); });
    for (unsigned i = 0; i < options_.tcp_threads; ++i) {
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
    if (thread_.joinable()) thread_.join();
    for (auto& t : tcp_threads_) t.join();
    for (auto& job : tcp_jobs_) {
        complete(job.done, make_error(ErrorCode::kUnavailable, "forwarder stopped"));
    }
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

void Forwarder::submit(const Question& question, Callback done) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        if (!stopping_) {
            submissions_.emplace_back(question, std::move(done));
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

size_t Forwarder::next_upstream(size_t after) const {
    // Caller holds mutex_. Returns `after` itself when it is the only usable
    // one of its set.
    for (size_t step = 1; step <= upstreams_.size(); ++step) {
        size_t i = (after + step) % upstreams_.size();
        if (!upstreams_[i].dropped && upstreams_[i].set == upstreams_[after].set) return i;
    }
    return after;
}

size_t Forwarder::set_for(std::string_view lower_name) const {
    size_t set = 0;
    size_t longest = 0;
    for (size_t i = 0; i < options_.stubs.size(); ++i) {
        const std::string& zone = options_.stubs[i].zone;
        if (zone.size() > longest && name_is_under(lower_name, zone)) {
            set = i + 1;
            longest = zone.size();
        }
    }
    return set;
}

size_t Forwarder::usable_in(size_t set) const {
    // Caller holds mutex_.
    size_t usable = 0;
    for (const auto& upstream : upstreams_) usable += upstream.set == set && !upstream.dropped;
    return usable;
}

void Forwarder::complete(Callback& done, Result<Message> result) {
    if (result.ok()) {
        uint8_t rcode = result->header.rcode;
        if (rcode < 6) {
            responses_by_rcode_[rcode].fetch_add(1, std::memory_order_relaxed);
        } else {
            responses_other_.fetch_add(1, std::memory_order_relaxed);
        }
    } else {
        failures_.fetch_add(1, std::memory_order_relaxed);
    }
    if (done) done(std::move(result));
}

void Forwarder::send_attempt(Pending& pending) {
    HostPort address;
    {
        std::lock_guard lock(mutex_);
        address = upstreams_[pending.upstream].address;
    }
    ++pending.attempts;
    pending.deadline = std::chrono::steady_clock::now() + options_.attempt_timeout;
    int fd = socket_for(address);
    SocketAddress to = to_socket_address(address);
    if (fd < 0 || ::sendto(fd, pending.packet.data(), pending.packet.size(), 0, to.sockaddr(),
                           to.length()) < 0) {
        errors_.fetch_add(1, std::memory_order_relaxed);
        // The deadline scan retries it; an immediate retry could spin.
        pending.deadline = std::chrono::steady_clock::now();
    }
}

void Forwarder::retry_or_fail(uint16_t id, const char* reason) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Pending& pending = it->second;
    bool retry = false;
    {
        std::lock_guard lock(mutex_);
        retry = pending.attempts < options_.max_attempts &&
                usable_in(upstreams_[pending.upstream].set) > 0;
        if (retry) pending.upstream = next_upstream(pending.upstream);
    }
    if (retry) {
        send_attempt(pending);
        return;
    }
    Callback done = std::move(pending.done);
    std::string name = name_to_text(pending.question.name);
    pending_.erase(it);
    complete(done, make_error(ErrorCode::kUnavailable,
                              std::string("no upstream answered ") + name + ": " + reason));
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
        if (it == pending_.end()) continue;  // late, a probe's answer, or spoofed
        Pending& pending = it->second;
        HostPort upstream;
        size_t usable_in_set = 0;
        {
            std::lock_guard lock(mutex_);
            upstream = upstreams_[pending.upstream].address;
            usable_in_set = usable_in(upstreams_[pending.upstream].set);
        }
        if (!(from_socket_address(from) == upstream) || !same_question(*reply, pending.question)) {
            continue;
        }
        if (reply->header.tc) {
            tcp_retries_.fetch_add(1, std::memory_order_relaxed);
            TcpJob job{pending.question, pending.packet, upstream, std::move(pending.done)};
            pending_.erase(it);
            {
                std::lock_guard lock(tcp_mutex_);
                tcp_jobs_.push_back(std::move(job));
            }
            tcp_cv_.notify_one();
            continue;
        }
        auto rcode = static_cast<Rcode>(reply->header.rcode);
        if ((rcode == Rcode::kServFail || rcode == Rcode::kRefused) &&
            pending.attempts < options_.max_attempts && usable_in_set > 1) {
            errors_.fetch_add(1, std::memory_order_relaxed);
            retry_or_fail(reply->header.id, to_string(rcode));
            continue;
        }
        {
            std::lock_guard lock(mutex_);
            preferred_[upstreams_[pending.upstream].set] = pending.upstream;
        }
        Callback done = std::move(pending.done);
        pending_.erase(it);
        complete(done, std::move(*reply));
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
                handle_reply(fd);
            }
        }
        std::deque<std::pair<Question, Callback>> submissions;
        {
            std::lock_guard lock(mutex_);
            submissions.swap(submissions_);
        }
        for (auto& [question, done] : submissions) {
            size_t upstream = kNoUpstream;
            {
                std::lock_guard lock(mutex_);
                size_t preferred = preferred_[set_for(name_lower(question.name))];
                if (preferred != kNoUpstream) {
                    upstream = upstreams_[preferred].dropped ? next_upstream(preferred) : preferred;
                    if (upstreams_[upstream].dropped) upstream = kNoUpstream;
                }
            }
            if (pending_.size() >= kMaxPending || upstream == kNoUpstream) {
                complete(done, make_error(ErrorCode::kUnavailable, "no upstream available"));
                continue;
            }
            uint16_t id = new_id();
            while (pending_.count(id)) id = new_id();
            Pending& pending = pending_[id];
            pending.question = question;
            pending.packet = query_packet(id, question);
            pending.done = std::move(done);
            pending.upstream = upstream;
            send_attempt(pending);
        }
        auto now = std::chrono::steady_clock::now();
        std::vector<uint16_t> expired;
        for (const auto& [id, pending] : pending_) {
            if (pending.deadline <= now) expired.push_back(id);
        }
        for (uint16_t id : expired) {
            timeouts_.fetch_add(1, std::memory_order_relaxed);
            retry_or_fail(id, "timeout");
        }
    }
    for (auto& [id, pending] : pending_) {
        complete(pending.done, make_error(ErrorCode::kUnavailable, "forwarder stopped"));
    }
    pending_.clear();
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
        auto reply = tcp_exchange(job.upstream, job.packet);
        if (!reply) {
            errors_.fetch_add(1, std::memory_order_relaxed);
        } else if (!same_question(*reply, job.question)) {
            errors_.fetch_add(1, std::memory_order_relaxed);
            reply = make_error(ErrorCode::kUnavailable, "TCP reply for another question");
        }
        complete(job.done, std::move(reply));
    }
}

void Forwarder::append_metrics(metrics::TextWriter& out) const {
    using metrics::Type;
    out.family(
        {"coredns_forward_requests_total", "Queries sent to upstreams.", Type::kCounter, {}});
    out.sample({}, requests_.load());
    out.family({"coredns_forward_responses_total",
                "Upstream replies by rcode.",
                Type::kCounter,
                {"rcode"}});
    for (uint8_t rcode = 0; rcode < 6; ++rcode) {
        out.sample({to_string(static_cast<Rcode>(rcode))}, responses_by_rcode_[rcode].load());
    }
    out.sample({"other"}, responses_other_.load());
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
