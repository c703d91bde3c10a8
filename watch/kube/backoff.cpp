#include "watch/kube/backoff.h"

#include <algorithm>

namespace sb::watch::kube {

Millis Backoff::nominal(const BackoffParams& params, unsigned failures) {
    Millis delay = params.initial;
    for (unsigned i = 0; i < failures && delay < params.cap; ++i) delay *= 2;
    return std::min(delay, params.cap);
}

Millis Backoff::jittered(Millis delay, double unit) {
    auto half = delay.count() / 2;
    return Millis(half + static_cast<int64_t>(static_cast<double>(delay.count() - half) * unit));
}

Millis Backoff::next(std::chrono::steady_clock::time_point now) {
    if (failures_ > 0 && now - last_failure_ > params_.reset_after) failures_ = 0;
    last_failure_ = now;
    Millis delay = nominal(params_, failures_);
    ++failures_;
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    return jittered(delay, unit(random_));
}

int Backoff::uniform(int low, int high) {
    std::uniform_int_distribution<int> value(low, high);
    return value(random_);
}

bool watch_counts_as_failure(Millis lasted, size_t lines) {
    return lasted < Millis(1000) && lines == 0;
}

bool watch_was_healthy(Millis lasted, size_t lines) {
    return lasted >= Millis(10000) && lines > 0;
}

std::optional<Millis> parse_retry_after(std::string_view value) {
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    while (!value.empty() && value.back() == ' ') value.remove_suffix(1);
    if (value.empty() || value.size() > 9) return std::nullopt;
    int64_t seconds = 0;
    for (char c : value) {
        if (c < '0' || c > '9') return std::nullopt;
        seconds = seconds * 10 + (c - '0');
    }
    return Millis(std::min<int64_t>(seconds, 300) * 1000);
}

}  // namespace sb::watch::kube
