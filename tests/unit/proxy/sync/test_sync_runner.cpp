// SyncRunner with a fake clock and a fake sync: no threads, no sleeping.
#include <catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "base/log.h"
#include "proxy/sync/sync_runner.h"

using namespace sb;
using namespace sb::proxy;
using namespace std::chrono_literals;

namespace {

// The injected failures below are logged at warn by design; keep the test
// output readable (unit_proxy is one process, so this covers all its tests).
const bool kQuietLogs = [] {
    sb::log::set_level("error");
    return true;
}();

class FakeClock final : public Clock {
  public:
    time_point now() const override { return now_; }
    void advance(std::chrono::nanoseconds by) { now_ += by; }

  private:
    time_point now_ = time_point{} + 1000h;
};

struct Harness {
    FakeClock clock;
    std::vector<SyncKind> runs;  // of every sync, in order
    bool fail = false;
    bool throw_error = false;
    SyncRunner runner{SyncTiming{1s, 30s, 1s},
                      [this](SyncKind kind) -> Status {
                          runs.push_back(kind);
                          if (throw_error) throw std::runtime_error("injected exception");
                          if (fail) return make_error(ErrorCode::kKernel, "injected failure");
                          return {};
                      },
                      clock};

    // Nothing runs until `delay` from now, and a sync runs right then.
    void expect_run_after(std::chrono::nanoseconds delay) {
        clock.advance(delay - 1ms);
        CHECK_FALSE(runner.run_due());
        clock.advance(1ms);
        CHECK(runner.run_due());
    }

    // Advances the clock in small steps up to `total`, running what is due.
    void run_for(std::chrono::nanoseconds total, std::chrono::nanoseconds step = 100ms) {
        for (std::chrono::nanoseconds elapsed{0}; elapsed < total; elapsed += step) {
            runner.run_due();
            clock.advance(step);
        }
    }
};

}  // namespace

TEST_CASE("nothing runs before the store is ready") {
    Harness h;
    h.runner.request();
    h.run_for(60s);
    CHECK(h.runs.empty());
    CHECK_FALSE(h.runner.next_due().has_value());
    h.runner.set_ready();
    CHECK(h.runner.run_due());
    REQUIRE(h.runs.size() == 1);
    CHECK(h.runs[0] == SyncKind::kFull);  // the first sync is full
    CHECK(h.runner.ever_succeeded());
}

TEST_CASE("requests are coalesced and honour the min interval") {
    Harness h;
    h.runner.set_ready();
    REQUIRE(h.runner.run_due());
    // A burst right after a sync waits for the min interval, then runs once.
    for (int i = 0; i < 5; ++i) h.runner.request();
    CHECK_FALSE(h.runner.run_due());
    h.expect_run_after(1s);
    CHECK_FALSE(h.runner.run_due());
    REQUIRE(h.runs.size() == 2);
    CHECK(h.runs[1] == SyncKind::kPartial);  // a change
    // A request long after the last sync runs at once.
    h.clock.advance(5s);
    h.runner.request();
    CHECK(h.runner.run_due());
    CHECK(h.runs.size() == 3);
}

TEST_CASE("no more than one sync per min interval under a steady stream of changes") {
    Harness h;
    h.runner.set_ready();
    for (int tick = 0; tick < 100; ++tick) {  // 10 s of a change every 100 ms
        h.runner.request();
        h.runner.run_due();
        h.clock.advance(100ms);
    }
    // The first sync at 0 s, then one per second.
    CHECK(h.runs.size() == 10);
}

TEST_CASE("a periodic sync, partial, runs every sync period without changes") {
    Harness h;
    h.runner.set_ready();
    h.run_for(95s);
    // At 0 s the first (full), then at 30 s, 60 s, 90 s: periodic.
    CHECK(h.runs == std::vector<SyncKind>{SyncKind::kFull, SyncKind::kPeriodic, SyncKind::kPeriodic,
                                          SyncKind::kPeriodic});
}

TEST_CASE("a full sync runs once the full sync period has passed since the last one") {
    Harness h;
    h.runner.set_ready();
    h.run_for(kFullSyncPeriod + 1s, 1s);
    REQUIRE(h.runs.size() == 1 + 120);  // one every 30 s for the hour
    CHECK(h.runs.front() == SyncKind::kFull);
    CHECK(h.runs.back() == SyncKind::kFull);  // at 3600 s
    CHECK(std::count(h.runs.begin(), h.runs.end(), SyncKind::kFull) == 2);
}

TEST_CASE("a stream of changes postpones neither the periodic sync nor the full one") {
    Harness h;
    h.runner.set_ready();
    h.runner.run_due();
    for (int tick = 0; tick < 350; ++tick) {  // 35 s of a change every 100 ms
        h.clock.advance(100ms);
        h.runner.request();
        h.runner.run_due();
    }
    // One a second: 1..29 s partial, 30 s periodic, 31..35 s partial.
    REQUIRE(h.runs.size() == 36);
    CHECK(std::count(h.runs.begin(), h.runs.end(), SyncKind::kPeriodic) == 1);
    CHECK(h.runs[30] == SyncKind::kPeriodic);
    CHECK(h.runs[29] == SyncKind::kPartial);
}

TEST_CASE("a partial sync does not postpone the periodic one") {
    Harness h;
    h.runner.set_ready();
    h.runner.run_due();
    h.clock.advance(20s);
    h.runner.request();
    h.runner.run_due();
    h.run_for(11s);
    CHECK(h.runs ==
          std::vector<SyncKind>{SyncKind::kFull, SyncKind::kPartial, SyncKind::kPeriodic});
}

TEST_CASE("a failed sync is retried, full, with a growing backoff") {
    Harness h;
    h.runner.set_ready();
    h.fail = true;
    CHECK(h.runner.run_due());
    CHECK(h.runner.consecutive_failures() == 1);
    CHECK_FALSE(h.runner.ever_succeeded());
    // Retry 1 s later, then 2 s, then 4 s.
    h.expect_run_after(1s);
    h.expect_run_after(2s);
    h.expect_run_after(4s);
    CHECK(h.runner.consecutive_failures() == 4);
    for (SyncKind kind : h.runs) CHECK(kind == SyncKind::kFull);
    // It recovers; the next change-driven sync is partial again.
    h.fail = false;
    h.clock.advance(8s);
    CHECK(h.runner.run_due());
    CHECK(h.runner.consecutive_failures() == 0);
    CHECK(h.runner.ever_succeeded());
    h.clock.advance(1s);
    h.runner.request();
    CHECK(h.runner.run_due());
    CHECK(h.runs.back() == SyncKind::kPartial);
}

TEST_CASE("an exception from the sync is a failure, not the end of the runner") {
    Harness h;
    h.runner.set_ready();
    h.throw_error = true;
    CHECK(h.runner.run_due());
    CHECK(h.runner.consecutive_failures() == 1);
    h.throw_error = false;
    h.clock.advance(1s);
    CHECK(h.runner.run_due());
    CHECK(h.runner.consecutive_failures() == 0);
}

TEST_CASE("the retry backoff is capped at the sync period") {
    Harness h;
    h.runner.set_ready();
    h.fail = true;
    h.run_for(300s, 500ms);
    // 1+2+4+8+16 = 31 s for the first six attempts, then one every 30 s.
    CHECK(h.runs.size() == 6 + (300 - 31) / 30);
}

TEST_CASE("the runner's own thread runs syncs off the caller's thread") {
    SteadyClock clock;
    std::mutex mutex;
    std::condition_variable done;
    int runs = 0;
    std::thread::id sync_thread;
    SyncRunner runner(
        SyncTiming{0ms, 30s, 1s},
        [&](SyncKind) -> Status {
            std::lock_guard lock(mutex);
            ++runs;
            sync_thread = std::this_thread::get_id();
            done.notify_all();
            return {};
        },
        clock);
    runner.start();
    runner.set_ready();
    std::unique_lock lock(mutex);
    // Bounded wait: a generous limit that only a hung runner reaches.
    REQUIRE(done.wait_for(lock, 10s, [&] { return runs >= 1; }));
    CHECK(sync_thread != std::this_thread::get_id());
    lock.unlock();
    runner.stop();
    runner.stop();  // idempotent
}
