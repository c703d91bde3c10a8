// SyncRunner: decides when the proxy rules are synced and runs the syncs on
// its own thread, never on a watch thread.
//
// Policy (kube-proxy's BoundedFrequencyRunner plus its retry rules):
//  * nothing runs before set_ready() (the Store holds a complete initial
//    state); the first sync after it is full;
//  * request() (a change was queued) runs a sync as soon as
//    --min-sync-period has passed since the previous sync started; a burst of
//    requests is coalesced into one sync;
//  * a periodic sync runs every --sync-period after the last periodic (or
//    full) one, changes or not: it is partial, with the backend's cheap check
//    that the kernel still holds its objects (kube-proxy's partial syncs
//    every syncPeriod, with its canary). A stream of changes never
//    postpones it;
//  * a full sync (the whole ruleset read back and rewritten) runs first, then
//    only when kFullSyncPeriod (an hour, kube-proxy's FullSyncPeriod) has
//    passed since the last successful one: at 50k Services it takes
//    seconds, and changes wait for it (docs/daemon.md, "Syncs");
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

// kube-proxy's proxyutil.FullSyncPeriod, which has no flag either.
inline constexpr std::chrono::nanoseconds kFullSyncPeriod = std::chrono::hours(1);

// What a sync is asked to do, cheapest first.
enum class SyncKind {
    kPartial,   // the queued changes only
    kPeriodic,  // the queued changes (if any) plus the cheap drift check
    kFull,      // everything, the kernel's copy not trusted
};

struct SyncTiming {
    std::chrono::nanoseconds min_interval = std::chrono::seconds(1);
    std::chrono::nanoseconds sync_period = std::chrono::seconds(30);  // periodic syncs
    std::chrono::nanoseconds initial_retry = std::chrono::seconds(1);
    std::chrono::nanoseconds full_sync_period = kFullSyncPeriod;
};

class SyncRunner {
  public:
    // `sync(kind)` computes and applies the rules; kFull means the backend
    // must not trust the previous plan (first sync, hourly, after a
    // failure). It runs on the runner's thread (or run_due()'s caller).
    using SyncFunction = std::function<Status(SyncKind kind)>;

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
    std::optional<Clock::time_point> last_periodic_start_;  // periodic or full
    std::optional<Clock::time_point> last_full_success_;
    std::optional<Clock::time_point> retry_at_;
    unsigned failures_ = 0;
    bool ever_succeeded_ = false;
    std::thread thread_;
};

}  // namespace sb::proxy
