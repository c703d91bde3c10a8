// A scripted, in-memory API server for the reflector's unit tests: each
// resource gets a FakeApi holding the answers to give, in order, and the
// requests it saw. No sockets, no threads, no sleeping: FakeClock's sleep()
// only records the delay and moves the clock (and yields to the other loops
// on the io_context, so that resources interleave at their waits).
//
// Thread safety: none; everything runs on the test's io_context thread.
#pragma once

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "watch/kube/api_transport.h"
#include "watch/kube/reflector.h"

namespace sb::watch::kube::testing {

class FakeClock final : public Clock {
  public:
    std::chrono::steady_clock::time_point now() override { return now_; }
    awaitable<void> sleep(Millis delay) override {
        sleeps.push_back(delay);
        now_ += delay;
        co_await boost::asio::post(co_await boost::asio::this_coro::executor,
                                   boost::asio::use_awaitable);
    }
    void advance(Millis delay) { now_ += delay; }

    std::vector<Millis> sleeps;  // every sleep(), in order

  private:
    std::chrono::steady_clock::time_point now_{};
};

// One scripted answer.
struct Step {
    enum class Request { kList, kWatch };
    Request request = Request::kList;  // what the reflector must ask for
    Reply reply;
    // A watch answered 200: the body's lines, lines dropped for their size
    // (reported after the lines), how long the stream lasts and how it ends.
    std::vector<std::string> lines;
    size_t oversized = 0;
    Millis lasts{0};
    StreamEnd end;
    // Runs when the request arrives, before it is answered.
    std::function<void()> before;
};

inline Step list_page(std::string body) {
    Step step;
    step.reply.status = 200;
    step.reply.body = std::move(body);
    return step;
}

inline Step answer(Step::Request request, unsigned status, std::string body = "",
                   std::string retry_after = "") {
    Step step;
    step.request = request;
    step.reply.status = status;
    step.reply.body = std::move(body);
    step.reply.retry_after = std::move(retry_after);
    return step;
}

// A watch answered 200 that streams `lines` over `lasts`, then ends as `how`.
inline Step watch_stream(std::vector<std::string> lines, Millis lasts = std::chrono::seconds(300),
                         StreamEnd::How how = StreamEnd::How::kEnded) {
    Step step = answer(Step::Request::kWatch, 200);
    step.lines = std::move(lines);
    step.lasts = lasts;
    step.end.how = how;
    return step;
}

// A request that got no answer: `sent` false when it never reached the server.
inline Step no_answer(Step::Request request, bool sent, std::string failure) {
    Step step;
    step.request = request;
    step.reply.sent = sent;
    step.reply.failure = std::move(failure);
    return step;
}

class FakeApi {
  public:
    explicit FakeApi(FakeClock& clock) : clock_(clock) {}

    void script(std::vector<Step> steps) {
        for (auto& step : steps) steps_.push_back(std::move(step));
    }
    // Called when a request finds the script empty (the request then fails as
    // not sent); tests stop the reflector here.
    std::function<void()> on_exhausted;

    // "LIST target" or "WATCH target" for every request, in order.
    std::vector<std::string> requests;
    // Requests of the other type than the script expected.
    std::vector<std::string> mismatches;
    size_t disconnects = 0;
    size_t transports_made = 0;

    std::unique_ptr<ApiTransport> transport() {
        ++transports_made;
        return std::make_unique<Transport>(*this);
    }

  private:
    class Transport final : public ApiTransport {
      public:
        explicit Transport(FakeApi& api) : api_(api) {}
        awaitable<Reply> get(const std::string& target) override {
            co_return api_.answer(Step::Request::kList, "LIST " + target).reply;
        }
        awaitable<Reply> open_watch(const std::string& target, std::chrono::seconds) override {
            api_.watch_ = api_.answer(Step::Request::kWatch, "WATCH " + target);
            co_return api_.watch_.reply;
        }
        awaitable<StreamEnd> read_watch(const WatchLineHandlers& handlers) override {
            const Step& step = api_.watch_;
            for (const auto& line : step.lines) {
                if (!handlers.line(line)) co_return StreamEnd{StreamEnd::How::kStopped, {}, false};
            }
            if (step.oversized > 0) handlers.oversized(step.oversized);
            api_.clock_.advance(step.lasts);
            co_return step.end;
        }
        void disconnect() override { ++api_.disconnects; }

      private:
        FakeApi& api_;
    };

    Step answer(Step::Request request, std::string description) {
        requests.push_back(description);
        if (steps_.empty()) {
            if (on_exhausted) on_exhausted();
            Step none;
            none.reply.failure = "script exhausted";
            return none;
        }
        Step step = std::move(steps_.front());
        steps_.pop_front();
        if (step.request != request) mismatches.push_back(description);
        if (step.before) step.before();
        return step;
    }

    FakeClock& clock_;
    std::deque<Step> steps_;
    Step watch_;  // the watch being streamed
};

}  // namespace sb::watch::kube::testing
