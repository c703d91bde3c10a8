#include "proxy/sync/sync_runner.h"

#include <algorithm>
#include <exception>
#include <string>

#include <fmt/format.h>

#include "base/log.h"
#include "base/threads/thread_name.h"

namespace sb::proxy {

SyncRunner::SyncRunner(SyncTiming timing, SyncFunction sync, const Clock& clock)
    : timing_(timing), sync_(std::move(sync)), clock_(clock) {}

SyncRunner::~SyncRunner() {
    stop();
}

void SyncRunner::request() {
    std::lock_guard lock(mutex_);
    pending_ = true;
    woken_ = true;
    wake_.notify_one();
}

void SyncRunner::set_ready() {
    std::lock_guard lock(mutex_);
    ready_ = true;
    woken_ = true;
    wake_.notify_one();
}

std::optional<Clock::time_point> SyncRunner::next_due() const {
    std::lock_guard lock(mutex_);
    return next_due_locked();
}

std::optional<Clock::time_point> SyncRunner::next_due_locked() const {
    if (!ready_) return std::nullopt;
    // The first sync is due at once.
    if (!last_start_) return Clock::time_point::min();
    const Clock::time_point earliest = *last_start_ + timing_.min_interval;
    if (failures_ > 0) return std::max(earliest, *retry_at_);
    Clock::time_point due = Clock::time_point::max();
    if (pending_) due = earliest;
    if (last_periodic_start_) {
        due = std::min(due, std::max(earliest, *last_periodic_start_ + timing_.sync_period));
    }
    return due;
}

bool SyncRunner::run_due() {
    SyncKind kind = SyncKind::kPartial;
    Clock::time_point started;
    {
        std::lock_guard lock(mutex_);
        auto due = next_due_locked();
        started = clock_.now();
        if (!due || started < *due) return false;
        if (failures_ > 0 || !last_full_success_ ||
            started >= *last_full_success_ + timing_.full_sync_period) {
            kind = SyncKind::kFull;
        } else if (!last_periodic_start_ ||
                   started >= *last_periodic_start_ + timing_.sync_period) {
            kind = SyncKind::kPeriodic;
        }
        // Requests arriving while this sync runs ask for another one.
        pending_ = false;
        last_start_ = started;
        if (kind != SyncKind::kPartial) last_periodic_start_ = started;
    }
    Status status;
    try {
        status = sync_(kind);
    } catch (const std::exception& error) {
        // Nothing may escape the runner's thread; an exception (allocation
        // failure) is a failed sync like any other and is retried.
        status = make_error(ErrorCode::kInternal, fmt::format("sync threw: {}", error.what()));
    }
    std::lock_guard lock(mutex_);
    if (status) {
        failures_ = 0;
        retry_at_.reset();
        ever_succeeded_ = true;
        if (kind == SyncKind::kFull) last_full_success_ = started;
        return true;
    }
    ++failures_;
    auto backoff = std::min(timing_.initial_retry, timing_.sync_period);
    for (unsigned i = 1; i < failures_ && backoff < timing_.sync_period; ++i) backoff *= 2;
    backoff = std::min(backoff, timing_.sync_period);
    retry_at_ = clock_.now() + backoff;
    log::warn("sync failed ({} in a row), retrying in {} ms: {}", failures_,
              std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count(),
              status.error().describe());
    return true;
}

void SyncRunner::start() {
    std::lock_guard lock(mutex_);
    if (thread_.joinable()) return;
    stopping_ = false;
    thread_ = start_named_thread("sb-sync", [this] { loop(); });
}

void SyncRunner::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        wake_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
}

void SyncRunner::loop() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            auto due = next_due_locked();
            auto woke = [this] { return stopping_ || woken_; };
            if (!due || *due == Clock::time_point::max()) {
                wake_.wait(lock, woke);
            } else if (*due > clock_.now()) {
                wake_.wait_until(lock, *due, woke);
            }
            if (stopping_) return;
            woken_ = false;
        }
        run_due();
    }
}

bool SyncRunner::ever_succeeded() const {
    std::lock_guard lock(mutex_);
    return ever_succeeded_;
}

unsigned SyncRunner::consecutive_failures() const {
    std::lock_guard lock(mutex_);
    return failures_;
}

}  // namespace sb::proxy
