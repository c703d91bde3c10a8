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

    // The wait before the next attempt; counts one more failure.
    Millis next();
    void reset() { failures_ = 0; }
    unsigned failures() const { return failures_; }

    // A random value in [low, high], for the randomised watch timeout.
    int uniform(int low, int high);

  private:
    BackoffParams params_;
    std::mt19937_64 random_;
    unsigned failures_ = 0;
};

// Whether a watch that answered 200 and then ended cleanly is a failure for
// the backoff: it is when it lasted under a second and delivered nothing, as
// in client-go's reflector. A server (or a proxy in front of it) that closes
// every watch at once would otherwise have every node reconnect in a tight
// loop, since each clean end resets the backoff.
bool watch_counts_as_failure(Millis lasted, size_t lines);

// Retry-After as delta-seconds (the form the API server sends); nullopt when
// absent or not a number. Capped at five minutes so that a bogus header cannot
// park the watcher forever.
std::optional<Millis> parse_retry_after(std::string_view value);

}  // namespace sb::watch::kube
