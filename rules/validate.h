// Validation of Plan values before any backend hands them to the kernel.
// Shared by every backend, so the same service port is accepted or skipped
// whatever --proxy-mode says. Pure and thread-safe.
#pragma once

#include <string_view>

#include "base/result.h"
#include "rules/backend.h"
#include "rules/plan.h"

namespace sb::rules {

// Checks what the kernel will receive: a non-zero port, one clusterIP per
// family, unicast endpoint addresses with non-zero ports, specified
// external/LB addresses, an affinity timeout within the API's 86400 s.
// The error names the service port and field; the caller skips the port.
Status validate_service(const ServicePortPlan& port);
// A service CIDR (Plan::service_cidrs) new connections may be dropped for:
// not one that overlaps the loopback or link-local ranges (the node's own
// traffic, node-local DNS and metadata addresses live there, and no
// ClusterIP can), which a whole-family range (/0) does. The error names it.
Status validate_service_cidr(const Prefix& cidr);
// The mark is not 0; the interface modes of local_detect_mode name an
// interface (validate_interface_name).
Status validate_options(const BackendOptions& options);
// A name (or name prefix) the kernel could give an interface: 1-15 bytes,
// no control character, whitespace, '/' or ':'; nor '"', '*' or '+', which
// would change the meaning of nft's `iifname "NAME*"` and iptables'
// `-i NAME+` text forms.
Status validate_interface_name(std::string_view name);

}  // namespace sb::rules
