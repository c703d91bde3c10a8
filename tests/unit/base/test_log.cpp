// log::HeldLines: lines are held per thread, dropped unless released.
#include <spdlog/sinks/ostream_sink.h>
#include <catch.hpp>

#include <sstream>
#include <thread>

#include "base/log.h"

namespace {

// Adds a sink that captures the default logger's output for the scope.
// Single-threaded set-up: no other thread may log while it is added or
// removed.
class CapturedLog {
  public:
    CapturedLog() : sink_(std::make_shared<spdlog::sinks::ostream_sink_st>(text_)) {
        sink_->set_pattern("%l %v");
        spdlog::default_logger()->sinks().push_back(sink_);
    }
    ~CapturedLog() { spdlog::default_logger()->sinks().pop_back(); }
    std::string text() const { return text_.str(); }

  private:
    std::ostringstream text_;
    std::shared_ptr<spdlog::sinks::ostream_sink_st> sink_;
};

}  // namespace

TEST_CASE("held lines are dropped unless released", "[log]") {
    CapturedLog captured;
    {
        sb::log::HeldLines held;
        sb::log::warn("dropped {}", 1);
    }
    sb::log::warn("after the hold");
    CHECK(captured.text() == "warning after the hold\n");
}

TEST_CASE("released lines are written in order, at their levels", "[log]") {
    CapturedLog captured;
    {
        sb::log::HeldLines held;
        sb::log::warn("first {}", "line");
        sb::log::debug("below the level, not held");
        sb::log::error(std::string("second"));
        CHECK(captured.text().empty());
        held.release();
        sb::log::info("after the release");
    }
    CHECK(captured.text() == "warning first line\nerror second\ninfo after the release\n");
}

TEST_CASE("another thread's lines are not held", "[log]") {
    CapturedLog captured;
    sb::log::HeldLines held;
    std::thread other([] { sb::log::warn("from another thread"); });
    other.join();
    CHECK(captured.text() == "warning from another thread\n");
}
