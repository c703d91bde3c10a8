// The API client's timing knobs: production defaults, and the test override
// from $SWITCHBOARD_KUBE_TUNING. Pure; thread-safe.
#pragma once

#include <string_view>

#include "base/result.h"

namespace sb::watch::kube {

// Timing knobs. The defaults are the production values; tests shorten them
// through SWITCHBOARD_KUBE_TUNING (see parse_tuning) so that a stalled server
// or a backoff is seen within seconds.
struct KubeTuning {
    int watch_timeout_min_s = 300;  // timeoutSeconds of a WATCH, drawn uniformly in [min, max]
    int watch_timeout_max_s = 600;
    int watch_grace_s = 30;        // client-side deadline past timeoutSeconds (a stalled server)
    int request_timeout_s = 60;    // connect, TLS handshake, one LIST page
    int backoff_initial_ms = 500;  // doubled per failure, jittered, capped
    int backoff_cap_ms = 30000;
    int list_limit = 500;  // items per LIST page
};
// "key=value,key=value" with the field names of KubeTuning; error names the key.
Result<KubeTuning> parse_tuning(std::string_view text);
inline constexpr const char* kTuningEnv = "SWITCHBOARD_KUBE_TUNING";

}  // namespace sb::watch::kube
