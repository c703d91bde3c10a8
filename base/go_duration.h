// Go's time.Duration text, as kube-proxy's flags and KubeProxyConfiguration
// spell durations ("30s", "1m0s", "500ms").
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/result.h"

namespace sb {

// A Go duration (time.ParseDuration): "300ms", "1.5h", "1m30s", "0".
// Units ns, us (µs), ms, s, m, h; a sign is allowed; every number but a
// bare "0" needs a unit. Errors are kInvalidArgument, e.g. `"3x" is not a
// duration (unknown unit "x"; e.g. 500ms, 1s, 1m30s)`.
Result<std::chrono::nanoseconds> parse_go_duration(std::string_view text);

// The canonical Go spelling of a duration ("1m30s", "500ms"), for messages.
std::string format_go_duration(std::chrono::nanoseconds duration);

}  // namespace sb
