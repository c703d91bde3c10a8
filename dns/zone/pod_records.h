// PodRecords: which a-b-c-d.ns.pod.<zone> names the zone answers (--dns-pods,
// CoreDNS's kubernetes `pods` option). Below the zone, which indexes them,
// and the options and the Corefile, which set it.
#pragma once

#include <string_view>

#include "base/result.h"

namespace sb::dns {

enum class PodRecords { kDisabled, kInsecure, kVerified };

// --dns-pods: disabled|insecure|verified.
Result<PodRecords> parse_pod_records(std::string_view text);

}  // namespace sb::dns
