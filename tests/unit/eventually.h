// eventually: polls a condition that another thread makes true (a server's
// metric, a daemon's readiness) every 10 ms until it holds or `limit` has
// passed. A bound on a wait, not a timing assert: only a broken program
// reaches it. Header-only.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace sb::testing {

// True as soon as `done()` is; false when it still is not after `limit`.
inline bool eventually(const std::function<bool()>& done,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
    constexpr auto kPoll = std::chrono::milliseconds(10);
    for (auto waited = std::chrono::milliseconds(0); waited < limit; waited += kPoll) {
        if (done()) return true;
        std::this_thread::sleep_for(kPoll);
    }
    return done();
}

}  // namespace sb::testing
