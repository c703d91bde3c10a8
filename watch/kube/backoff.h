// Reconnect pacing for the API client: exponential backoff with jitter, and
// the Retry-After header of a 429/503. Pure; not thread-safe (one per watcher).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string_view>

namespace sb::watch::kube {

using Millis = std::chrono::milliseconds;

struct BackoffParams {
    Millis initial{500};
    Millis cap{30000};
    // A failure more than this after the previous one starts the series over
    // from `initial`: after two quiet minutes the server is taken as healthy
    // again (client-go's reflector: the resetDuration of its
    // ExponentialBackoffManager).
    Millis reset_after{120000};
};

class Backoff {
  public:
    Backoff(BackoffParams params, uint64_t seed) : params_(params), random_(seed) {}

    // min(cap, initial * 2^failures) for the failures so far.
    static Millis nominal(const BackoffParams& params, unsigned failures);
    // Spreads a delay over [delay/2, delay] (unit in [0, 1)), so that many
    // nodes losing the same API server do not come back in lockstep while
    // the wait still grows with every failure.
    static Millis jittered(Millis delay, double unit);

    // The wait before the next attempt, for a failure at `now`; counts one
    // more failure, after starting the series over when the previous failure
    // is more than reset_after old.
    Millis next(std::chrono::steady_clock::time_point now);
    void reset() { failures_ = 0; }
    unsigned failures() const { return failures_; }

    // A random value in [low, high], for the randomised watch timeout.
    int uniform(int low, int high);

  private:
    BackoffParams params_;
    std::mt19937_64 random_;
    unsigned failures_ = 0;
    std::chrono::steady_clock::time_point last_failure_{};
};

// Whether a watch that answered 200 and then ended cleanly is a failure for
// the backoff: it is when it lasted under a second and delivered nothing, as
// in client-go's reflector. A server (or a proxy in front of it) that closes
// every watch at once would otherwise have every node reconnect in a tight
// loop, since each clean end resets the backoff.
bool watch_counts_as_failure(Millis lasted, size_t lines);

// Whether an established watch (answered 200) was healthy, so that the
// failure that ended it (a cut connection, a stall, an ERROR event) is the
// first of a new series and waits the initial delay, not one more of the
// failures before it: it delivered at least one event or bookmark and lasted
// at least 10 s. A watch that fails fast keeps the backoff growing, and a
// server that serves a little and then cuts still sees at most one
// reconnect per 10 s per resource from each node.
bool watch_was_healthy(Millis lasted, size_t lines);

// Retry-After as delta-seconds (the form the API server sends); nullopt when
// absent or not a number. Capped at five minutes so that a bogus header cannot
// park the watcher forever.
std::optional<Millis> parse_retry_after(std::string_view value);

}  // namespace sb::watch::kube
