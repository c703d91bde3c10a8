// RFC 3339 timestamps as Kubernetes writes them (metav1.Time, and the
// RFC3339Nano annotations such as endpoints.kubernetes.io/last-change-trigger-time),
// and as Go's json.Marshal prints a time.Time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace sb {

using SystemTime = std::chrono::system_clock::time_point;

// "2024-05-01T12:00:00Z", "2024-05-01T12:00:00.123456789+02:00": Go's
// time.Parse(time.RFC3339Nano, ...) for the forms it accepts (an optional
// fraction, digits past nanoseconds ignored; "Z" or a +hh:mm/-hh:mm offset;
// seconds 0-59). nullopt for anything else, and for a time SystemTime
// cannot hold (before 1678 or after 2261).
std::optional<SystemTime> parse_rfc3339(std::string_view text);

// In UTC with nanoseconds, trailing zeros of the fraction dropped
// ("2024-05-01T12:00:00.5Z"): Go's time.RFC3339Nano, which json.Marshal uses.
std::string format_rfc3339_nano(SystemTime time);

}  // namespace sb
