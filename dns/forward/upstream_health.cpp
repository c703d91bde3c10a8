#include "dns/forward/upstream_health.h"

#include <algorithm>

#include "base/log.h"
#include "dns/forward/upstream_exchange.h"
#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

// health_check 0 is valid in CoreDNS (probes back to back); a floor keeps a
// dead upstream from spinning the probe thread.
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
    if (any) probe_thread_.emplace();
}

void UpstreamHealth::stop() {
    std::vector<Background::Task> probes;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        for (size_t i = 0; i < targets_.size(); ++i) probes.push_back(std::move(states_[i].probes));
    }
    // Outside the lock, which a probe's end takes.
    probes.clear();
    probe_thread_.reset();
}

void UpstreamHealth::exchange_failed(size_t upstream) {
    if (targets_.at(upstream).max_fails == 0) return;
    // The previous probes' task, over (its last probe got a reply), is
    // released after the lock.
    Background::Task over;
    std::lock_guard lock(mutex_);
    State& state = states_[upstream];
    if (stopping_ || !probe_thread_ || state.probing) return;
    state.probing = true;
    over = std::exchange(state.probes,
                         probe_thread_->repeat("dns health probe", Background::Duration(0),
                                               [this, upstream] { return probe_once(upstream); }));
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
    auto reply = target.tls   ? target.tls->exchange(target.address, target.tls_name, packet,
                                                     probe_timeout_, target.source)
                 : target.tcp ? tcp_exchange(target.address, packet, probe_timeout_, target.source)
                              : udp_exchange(target.address, packet, probe_timeout_, target.source);
    if (!reply) {
        log::debug("dns: health probe of {} failed: {}", target.address, reply.error().describe());
    }
    return reply.ok();
}

Background::Next UpstreamHealth::probe_once(size_t upstream) {
    const Target& target = targets_[upstream];
    State& state = states_[upstream];
    bool healthy = probe(target);
    if (healthy) {
        if (state.fails.exchange(0) > target.max_fails) {
            log::info("dns: upstream {} answers its health probe again", target.address);
        }
    } else {
        metrics_.health_check_failed(upstream);
        if (state.fails.fetch_add(1) + 1 == target.max_fails + 1) {
            log::warn("dns: upstream {} is down: {} health probes failed", target.address,
                      target.max_fails + 1);
        }
    }
    std::lock_guard lock(mutex_);
    state.probing = !healthy;
    if (healthy) return std::nullopt;
    return std::max<std::chrono::milliseconds>(target.interval, kMinInterval);
}

}  // namespace sb::dns
