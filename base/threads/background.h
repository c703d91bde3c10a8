// Background: the one model for work off the serving paths (reloaders,
// health probes, bind retries): one Boost.Asio io_context run by one thread
// of its own, and tasks on it that run now, after a delay, every period, or
// again after each delay they ask for. docs/foundations.md, "Background
// work", says which threads stay their own and why.
//
// Tasks of one Background run one at a time, in the order they fall due
// (two due at once: in the order they were scheduled). Every run is under
// run_guarded (base/threads/panic_guard.h): an exception is counted in
// coredns_panics_total and logged with the task's `where`, and the thread
// goes on; a repeating task runs again after the delay it last asked for.
//
// Ownership: a task belongs to its Task handle. Task::cancel() and the
// handle's destruction stop it: once they return, its body is not running
// and never runs again, so an owner that cancels its tasks first may then
// free what their bodies use. Called from a task body (on the background
// thread) they do not wait, since the only task that can be running then is
// the caller. A Background must outlive every Task made on it.
//
// Thread safety: scheduling, cancel() and the handle's destruction from any
// thread, the background thread included. A body must not block on a lock
// that an owner holds while it cancels that task.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace sb {

class Background {
  public:
    using Duration = std::chrono::milliseconds;
    // The delay before the next run; nullopt: no more runs.
    using Next = std::optional<Duration>;

    class Task {
      public:
        Task() = default;  // no task: cancel() does nothing
        ~Task();           // cancel()s
        Task(Task&&) noexcept;
        Task& operator=(Task&&) noexcept;  // cancels the task it held
        Task(const Task&) = delete;
        Task& operator=(const Task&) = delete;

        // Idempotent; see the contract above.
        void cancel();

        struct State;  // background.cpp

      private:
        friend class Background;
        explicit Task(std::shared_ptr<State> state);
        std::shared_ptr<State> state_;
    };

    Background();   // starts the thread
    ~Background();  // ends it once the running task returns
    Background(const Background&) = delete;
    Background& operator=(const Background&) = delete;

    // The process's background thread, started on first use and ended at
    // exit. Its tasks must not block for long: the others wait meanwhile.
    static Background& shared();

    // `where` names the task in the log line of a caught exception.
    [[nodiscard]] Task post(std::string where, std::function<void()> body);
    [[nodiscard]] Task after(std::string where, Duration delay, std::function<void()> body);
    // Every `period`, first after one period (a period under 1 ms counts
    // as 1 ms, so that a task never spins the thread).
    [[nodiscard]] Task every(std::string where, Duration period, std::function<void()> body);
    // Runs after `delay`, then again after each delay the body returns,
    // until it returns nullopt.
    [[nodiscard]] Task repeat(std::string where, Duration delay, std::function<Next()> body);

  private:
    struct Loop;  // background.cpp: the io_context and its thread

    // The first run after `delay`; a run that throws is followed by one
    // after `after_throw` (nullopt: none).
    Task schedule(std::string where, Duration delay, Next after_throw, std::function<Next()> body);

    std::unique_ptr<Loop> loop_;
};

// CoreDNS's jittered period (plugin/reload): `interval` plus a uniform pick
// in [-jitter/2, jitter/2); `interval` itself when jitter is not positive.
// Any thread.
Background::Duration jittered(Background::Duration interval, Background::Duration jitter);

}  // namespace sb
