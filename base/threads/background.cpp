#include "base/threads/background.h"

#include <algorithm>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "base/threads/panic_guard.h"
#include "base/threads/thread_name.h"

namespace sb {

namespace asio = boost::asio;

struct Background::Loop {
    asio::io_context io;
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread = start_named_thread("sb-background", [this] { io.run(); });

    bool on_thread() const { return std::this_thread::get_id() == thread.get_id(); }
};

struct Background::Task::State {
    State(Loop& loop, std::string where, std::function<Next()> body, Next last)
        : loop(loop), where(std::move(where)), body(std::move(body)), last(last) {}

    Loop& loop;
    const std::string where;
    std::function<Next()> body;  // null once the task is over
    Next last;                   // the background thread's: the delay after a throwing run
    std::optional<asio::steady_timer> timer;  // the background thread's
    std::mutex mutex;                         // guards the two flags
    std::condition_variable idle;             // signalled when `running` ends
    bool cancelled = false;
    bool running = false;
};

namespace {

using State = Background::Task::State;

void arm(const std::shared_ptr<State>& state, Background::Duration delay);

// One run of the body on the background thread, then the next one armed.
void run_once(const std::shared_ptr<State>& state) {
    {
        std::lock_guard lock(state->mutex);
        if (state->cancelled || !state->body) return;
        state->running = true;
    }
    Background::Next next;
    if (run_guarded(state->where, [&] { next = state->body(); })) state->last = next;
    std::function<Background::Next()> over;  // destroyed after the lock is released
    {
        std::lock_guard lock(state->mutex);
        state->running = false;
        if (state->cancelled || !state->last) over = std::move(state->body);
    }
    state->idle.notify_all();
    if (!over && state->last) arm(state, *state->last);
}

void arm(const std::shared_ptr<State>& state, Background::Duration delay) {
    if (!state->timer) state->timer.emplace(state->loop.io);
    state->timer->expires_after(delay);
    state->timer->async_wait([state](const boost::system::error_code& error) {
        if (!error) run_once(state);
    });
}

}  // namespace

Background::Task::Task(std::shared_ptr<State> state) : state_(std::move(state)) {}

Background::Task::~Task() {
    cancel();
}

Background::Task::Task(Task&& other) noexcept = default;

Background::Task& Background::Task::operator=(Task&& other) noexcept {
    if (this != &other) {
        cancel();
        state_ = std::move(other.state_);
    }
    return *this;
}

void Background::Task::cancel() {
    if (!state_) return;
    std::shared_ptr<State> state = std::move(state_);
    std::function<Next()> body;  // destroyed after the lock is released
    {
        std::unique_lock lock(state->mutex);
        state->cancelled = true;
        if (!state->loop.on_thread()) state->idle.wait(lock, [&] { return !state->running; });
        if (!state->running) body = std::move(state->body);
    }
    // Frees the timer's wait now rather than when it falls due.
    asio::post(state->loop.io, [state] {
        if (state->timer) state->timer->cancel();
    });
}

Background::Background() : loop_(std::make_unique<Loop>()) {}

Background::~Background() {
    loop_->work.reset();
    loop_->io.stop();
    loop_->thread.join();
}

Background& Background::shared() {
    static Background background;
    return background;
}

Background::Task Background::post(std::string where, std::function<void()> body) {
    auto state = std::make_shared<State>(
        *loop_, std::move(where),
        [body = std::move(body)]() -> Next {
            body();
            return std::nullopt;
        },
        std::nullopt);
    asio::post(loop_->io, [state] { run_once(state); });
    return Task(std::move(state));
}

Background::Task Background::after(std::string where, Duration delay, std::function<void()> body) {
    return schedule(std::move(where), delay, std::nullopt, [body = std::move(body)]() -> Next {
        body();
        return std::nullopt;
    });
}

Background::Task Background::every(std::string where, Duration period, std::function<void()> body) {
    period = std::max(period, Duration(1));
    return schedule(std::move(where), period, period, [period, body = std::move(body)]() -> Next {
        body();
        return period;
    });
}

Background::Task Background::repeat(std::string where, Duration delay, std::function<Next()> body) {
    return schedule(std::move(where), delay, delay, std::move(body));
}

Background::Task Background::schedule(std::string where, Duration delay, Next after_throw,
                                      std::function<Next()> body) {
    auto state = std::make_shared<State>(*loop_, std::move(where), std::move(body), after_throw);
    asio::post(loop_->io, [state, delay] { arm(state, delay); });
    return Task(std::move(state));
}

Background::Duration jittered(Background::Duration interval, Background::Duration jitter) {
    const auto range = jitter.count();
    if (range <= 0) return interval;
    std::mt19937_64 random(std::random_device{}());
    std::uniform_int_distribution<int64_t> pick(0, range - 1);
    return interval + Background::Duration(pick(random) - range / 2);
}

}  // namespace sb
