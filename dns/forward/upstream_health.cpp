#include "dns/forward/upstream_health.h"

#include <algorithm>

#include "base/log.h"
#include "dns/forward/upstream_exchange.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

// health_check 0 is valid in CoreDNS (probes back to back); a floor keeps a
// dead upstream from spinning this thread.
constexpr auto kMinInterval = std::chrono::milliseconds(10);

}  // namespace

UpstreamHealth::UpstreamHealth(std::vector<Target> targets, ForwardMetrics& metrics,
                               std::chrono::milliseconds probe_timeout)
    : targets_(std::move(targets)),
      metrics_(metrics),
      probe_timeout_(probe_timeout),
      states_(std::make_unique<State[]>(targets_.size())) {}

UpstreamHealth::~UpstreamHealth() {
    stop();
}

void UpstreamHealth::start() {
    bool any = std::any_of(targets_.begin(), targets_.end(),
                           [](const Target& target) { return target.max_fails > 0; });
    if (any) thread_ = std::thread([this] { run(); });
}

void UpstreamHealth::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void UpstreamHealth::exchange_failed(size_t upstream) {
    if (targets_.at(upstream).max_fails == 0) return;
    {
        std::lock_guard lock(mutex_);
        State& state = states_[upstream];
        if (state.probing) return;
        state.probing = true;
        state.next_probe = std::chrono::steady_clock::now();
    }
    wake_.notify_all();
}

bool UpstreamHealth::down(size_t upstream) const {
    const uint32_t max_fails = targets_.at(upstream).max_fails;
    return max_fails > 0 && states_[upstream].fails.load(std::memory_order_relaxed) > max_fails;
}

bool UpstreamHealth::probe(const Target& target) {
    Message ping;
    // Unpredictable, as the queries' (issue 10): a forged reply would keep
    // a dead upstream "up".
    ping.header.id = random_.next16();
    ping.header.rd = true;
    ping.questions.push_back(Question{*name_from_text("."), type::kNS, kClassIN});
    std::string packet = write_message(ping).bytes;
    // Any reply, whatever its rcode, is a healthy upstream: only I/O counts.
    auto reply = target.tcp ? tcp_exchange(target.address, packet, probe_timeout_)
                            : udp_exchange(target.address, packet, probe_timeout_);
    if (!reply) {
        log::debug("dns: health probe of {} failed: {}", target.address.to_string(),
                   reply.error().describe());
    }
    return reply.ok();
}

void UpstreamHealth::run() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
        auto now = std::chrono::steady_clock::now();
        auto wake_at = now + std::chrono::hours(1);
        size_t due = targets_.size();
        for (size_t i = 0; i < targets_.size(); ++i) {
            if (!states_[i].probing) continue;
            if (states_[i].next_probe <= now) {
                due = i;
                break;
            }
            wake_at = std::min(wake_at, states_[i].next_probe);
        }
        if (due == targets_.size()) {
            wake_.wait_until(lock, wake_at);
            continue;
        }
        lock.unlock();
        const Target& target = targets_[due];
        bool healthy = probe(target);
        State& state = states_[due];
        if (healthy) {
            if (state.fails.exchange(0) > target.max_fails) {
                log::info("dns: upstream {} answers its health probe again",
                          target.address.to_string());
            }
        } else {
            metrics_.health_check_failed(due);
            if (state.fails.fetch_add(1) + 1 == target.max_fails + 1) {
                log::warn("dns: upstream {} is down: {} health probes failed",
                          target.address.to_string(), target.max_fails + 1);
            }
        }
        lock.lock();
        state.probing = !healthy;
        state.next_probe = std::chrono::steady_clock::now() +
                           std::max<std::chrono::milliseconds>(target.interval, kMinInterval);
    }
}

}  // namespace sb::dns
