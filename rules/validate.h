// Validation of Plan values before any backend hands them to the kernel.
// Shared by every backend, so the same service port is accepted or skipped
// whatever --proxy-mode says. Pure and thread-safe.
#pragma once

#include "base/result.h"
#include "rules/backend.h"
#include "rules/plan.h"

namespace sb::rules {

// Checks what the kernel will receive: a non-zero port, one clusterIP per
// family, unicast endpoint addresses with non-zero ports, specified
// external/LB addresses, an affinity timeout within the API's 86400 s.
// The error names the service port and field; the caller skips the port.
Status validate_service(const ServicePortPlan& port);
Status validate_options(const BackendOptions& options);

}  // namespace sb::rules
