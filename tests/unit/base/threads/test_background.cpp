// Background: tasks run in order, one at a time; cancel() and a handle's
// destruction wait for a running task and stop it for good, from inside a
// task too; an exception is counted and the thread goes on. No timing is
// asserted: waits are generous bounds that only keep a broken build from
// hanging.
#include <catch.hpp>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "base/threads/background.h"
#include "base/threads/panic_guard.h"

using namespace sb;
using namespace std::chrono_literals;

namespace {

constexpr auto kHang = 60s;  // only to end a test that would hang

// What the tasks did, read by the test thread.
struct Log {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int> entries;

    void add(int entry) {
        {
            std::lock_guard lock(mutex);
            entries.push_back(entry);
        }
        changed.notify_all();
    }
    // True once there are at least `n` entries (false: it would hang).
    bool wait_for(size_t n) {
        std::unique_lock lock(mutex);
        return changed.wait_for(lock, kHang, [&] { return entries.size() >= n; });
    }
    std::vector<int> copy() {
        std::lock_guard lock(mutex);
        return entries;
    }
};

// Runs a task after every earlier one of `background` ran: a posted task
// runs after those posted before it and after timers already due.
void drain(Background& background) {
    std::promise<void> done;
    auto task = background.post("drain", [&] { done.set_value(); });
    REQUIRE(done.get_future().wait_for(kHang) == std::future_status::ready);
}

}  // namespace

TEST_CASE("background: posted tasks run once each, in the order posted") {
    Background background;
    Log log;
    std::vector<Background::Task> tasks;
    for (int i = 0; i < 5; ++i) tasks.push_back(background.post("test", [&, i] { log.add(i); }));
    REQUIRE(log.wait_for(5));
    drain(background);
    CHECK(log.copy() == std::vector<int>{0, 1, 2, 3, 4});
}

TEST_CASE("background: a repeating task runs after each delay it returns until nullopt") {
    Background background;
    Log log;
    int runs = 0;  // the background thread's
    auto task = background.repeat("test", 0ms, [&]() -> Background::Next {
        log.add(++runs);
        if (runs == 4) return std::nullopt;
        return 1ms;
    });
    REQUIRE(log.wait_for(4));
    // Whatever ran later would be in the log before this marker's entry.
    std::promise<void> marker;
    auto later = background.after("test", 20ms, [&] { marker.set_value(); });
    REQUIRE(marker.get_future().wait_for(kHang) == std::future_status::ready);
    CHECK(log.copy() == std::vector<int>{1, 2, 3, 4});
}

TEST_CASE("background: after runs once, every until cancelled") {
    Background background;
    Log once;
    Log periodic;
    auto single = background.after("test", 1ms, [&] { once.add(1); });
    auto repeated = background.every("test", 1ms, [&] { periodic.add(1); });
    REQUIRE(once.wait_for(1));
    REQUIRE(periodic.wait_for(3));
    repeated.cancel();
    const size_t runs = periodic.copy().size();
    std::promise<void> marker;
    auto later = background.after("test", 20ms, [&] { marker.set_value(); });
    REQUIRE(marker.get_future().wait_for(kHang) == std::future_status::ready);
    CHECK(periodic.copy().size() == runs);  // none after cancel() returned
    CHECK(once.copy().size() == 1);
}

TEST_CASE("background: cancel() waits for the running task to finish") {
    Background background;
    std::promise<void> started;
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    bool finished = false;  // written by the task, read after cancel() returned
    auto task = background.post("test", [&] {
        started.set_value();
        released.wait();
        finished = true;
    });
    REQUIRE(started.get_future().wait_for(kHang) == std::future_status::ready);
    std::promise<void> cancelled;
    std::thread canceller([&] {
        task.cancel();
        cancelled.set_value();
    });
    auto cancel_returned = cancelled.get_future();
    // The task cannot finish before the release below, so neither can cancel().
    CHECK(cancel_returned.wait_for(10ms) == std::future_status::timeout);
    release.set_value();
    REQUIRE(cancel_returned.wait_for(kHang) == std::future_status::ready);
    canceller.join();
    CHECK(finished);
}

TEST_CASE("background: a task may cancel itself, and one task another") {
    Background background;
    Log log;
    std::promise<void> handles_ready;
    std::shared_future<void> ready = handles_ready.get_future().share();
    Background::Task self;
    Background::Task victim;
    int runs = 0;  // the background thread's
    self = background.every("test", 1ms, [&] {
        ready.wait();  // `self` and `victim` are assigned
        log.add(++runs);
        if (runs == 3) {
            self.cancel();  // returns at once: the running task is this one
            victim.cancel();
        }
    });
    bool victim_ran = false;
    victim = background.after("test", std::chrono::hours(1), [&] { victim_ran = true; });
    handles_ready.set_value();
    REQUIRE(log.wait_for(3));
    drain(background);
    std::promise<void> marker;
    auto later = background.after("test", 20ms, [&] { marker.set_value(); });
    REQUIRE(marker.get_future().wait_for(kHang) == std::future_status::ready);
    CHECK(log.copy() == std::vector<int>{1, 2, 3});
    CHECK_FALSE(victim_ran);
}

TEST_CASE("background: a handle's destruction stops its task; an owner may then go") {
    Background background;
    struct Owner {
        explicit Owner(Background& background)
            : ticks(background.every("test", 1ms, [this] { ++count; })) {}
        ~Owner() { ticks.cancel(); }  // before `count` goes
        int count = 0;
        Background::Task ticks;
    };
    for (int i = 0; i < 20; ++i) Owner owner(background);
    bool ran = false;
    {
        auto pending = background.after("test", std::chrono::hours(1), [&] { ran = true; });
    }
    Background::Task moved = background.after("test", std::chrono::hours(1), [&] { ran = true; });
    moved = Background::Task();  // cancels the task it held
    drain(background);
    CHECK_FALSE(ran);
}

TEST_CASE("background: a throwing task is counted and the thread goes on") {
    Background background;
    const uint64_t before = panics_total();
    Log log;
    auto boom = background.post("test boom", [] { throw std::runtime_error("boom"); });
    auto next = background.post("test", [&] { log.add(1); });
    REQUIRE(log.wait_for(1));
    CHECK(panics_total() == before + 1);

    // A repeating task that throws runs again after its last delay.
    int runs = 0;  // the background thread's
    auto repeated = background.repeat("test repeat", 1ms, [&]() -> Background::Next {
        ++runs;
        if (runs == 1) throw std::logic_error("first run");
        log.add(runs);
        return runs < 3 ? std::optional(1ms) : std::nullopt;
    });
    REQUIRE(log.wait_for(3));
    CHECK(log.copy() == std::vector<int>{1, 2, 3});
    CHECK(panics_total() == before + 2);
}

TEST_CASE("background: the shared thread runs tasks") {
    std::promise<void> ran;
    auto task = Background::shared().post("test", [&] { ran.set_value(); });
    CHECK(ran.get_future().wait_for(kHang) == std::future_status::ready);
}

TEST_CASE("background: jittered periods as CoreDNS picks them") {
    using ms = Background::Duration;
    CHECK(jittered(ms(5000), ms(0)) == ms(5000));
    CHECK(jittered(ms(5000), ms(-1)) == ms(5000));
    for (int i = 0; i < 100; ++i) {
        const ms period = jittered(ms(30000), ms(15000));
        CHECK(period >= ms(30000 - 7500));
        CHECK(period < ms(30000 + 7500));
    }
}
