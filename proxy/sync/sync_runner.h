// SyncRunner: decides when the proxy rules are synced and runs the syncs on
// its own thread, never on a watch thread.
//
// Policy (kube-proxy's BoundedFrequencyRunner plus its retry rules):
//  * nothing runs before set_ready() (the Store holds a complete initial
//    state); the first sync after it is full;
//  * request() (a change was queued) runs a sync as soon as
//    --min-sync-period has passed since the previous sync started; a burst of
//    requests is coalesced into one sync;
//  * a full sync runs every --sync-period after the last successful full one,
//    changes or not, so drift in the kernel is repaired;
//  * a failed sync is retried, full, after a backoff that starts at 1 s and
//    doubles up to --sync-period (and never sooner than the min interval).
//
// The clock is injected: unit tests drive run_due() with a fake clock and no
// thread. Thread safety: request(), set_ready() and the getters may be
// called from any thread; run_due() from one thread at a time (the runner's
// own thread once start() was called).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/result.h"

namespace sb::proxy {

class Clock {
  public:
    using time_point = std::chrono::steady_clock::time_point;
    virtual ~Clock() = default;
    virtual time_point now() const = 0;
};

class SteadyClock final : public Clock {
  public:
    time_point now() const override { return std::chrono::steady_clock::now(); }
};

struct SyncTiming {
    std::chrono::nanoseconds min_interval = std::chrono::seconds(1);
    std::chrono::nanoseconds full_resync_period = std::chrono::seconds(30);
    std::chrono::nanoseconds initial_retry = std::chrono::seconds(1);
};

class SyncRunner {
  public:
    // `sync(full)` computes and applies the rules; full means the backend must
    // not trust the previous plan (first sync, periodic resync, after a
    // failure). It runs on the runner's thread (or run_due()'s caller).
    using SyncFunction = std::function<Status(bool full)>;

    // `clock` must outlive the runner.
    SyncRunner(SyncTiming timing, SyncFunction sync, const Clock& clock);
    ~SyncRunner();  // stop()s
    SyncRunner(const SyncRunner&) = delete;
    SyncRunner& operator=(const SyncRunner&) = delete;

    void request();    // a change is queued
    void set_ready();  // the Store is synced: syncs may start

    // Runs one sync when one is due now; returns whether it ran.
    bool run_due();
    // When the next sync is due; nullopt when none is (not ready, or idle
    // until a request, which cannot happen once ready thanks to resyncs).
    std::optional<Clock::time_point> next_due() const;

    // The thread that waits for next_due() (on the steady clock) and runs.
    void start();
    void stop();  // idempotent; waits for a running sync to finish

    bool ever_succeeded() const;
    unsigned consecutive_failures() const;

  private:
    std::optional<Clock::time_point> next_due_locked() const;
    void loop();

    const SyncTiming timing_;
    const SyncFunction sync_;
    const Clock& clock_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool ready_ = false;
    bool pending_ = false;  // a request() arrived since the last sync started
    bool stopping_ = false;
    bool woken_ = false;
    std::optional<Clock::time_point> last_start_;
    std::optional<Clock::time_point> last_full_success_;
    std::optional<Clock::time_point> retry_at_;
    unsigned failures_ = 0;
    bool ever_succeeded_ = false;
    std::thread thread_;
};

}  // namespace sb::proxy
