// Internal to rules/dns_local: writes the notrack table (dns_local.h
// states what it holds).
#pragma once

#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules::dns_local {

// The kernel's `inet kNotrackTable` becomes render_notrack(addresses), in
// one transaction; empty `addresses` deletes the table (absent is success).
Status program_notrack(const std::vector<IpAddress>& addresses);

}  // namespace sb::rules::dns_local
