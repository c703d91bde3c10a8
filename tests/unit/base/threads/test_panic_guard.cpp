// run_guarded: an exception in a background thread's unit of work is counted and
// swallowed, the thread goes on.
#include <catch.hpp>

#include <stdexcept>
#include <thread>

#include "base/threads/panic_guard.h"

using namespace sb;

TEST_CASE("run_guarded runs the body once and counts nothing when it returns") {
    const uint64_t before = panics_total();
    int runs = 0;
    CHECK(run_guarded("test", [&] { ++runs; }));
    CHECK(runs == 1);
    CHECK(panics_total() == before);
}

TEST_CASE("run_guarded counts a std::exception and one of any other type") {
    const uint64_t before = panics_total();
    CHECK_FALSE(run_guarded("test", [] { throw std::runtime_error("boom"); }));
    CHECK(panics_total() == before + 1);
    CHECK_FALSE(run_guarded("test", [] { throw 42; }));
    CHECK(panics_total() == before + 2);
}

TEST_CASE("a thread whose work throws under run_guarded goes on with the next unit") {
    const uint64_t before = panics_total();
    int completed = 0;
    std::thread worker([&] {
        for (int i = 0; i < 5; ++i) {
            run_guarded("test worker", [&] {
                if (i % 2 == 0) throw std::logic_error("even");
                ++completed;
            });
        }
    });
    worker.join();  // std::terminate instead, had an exception left the thread
    CHECK(completed == 2);
    CHECK(panics_total() == before + 3);
}
