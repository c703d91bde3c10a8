// Protocol: a Service port's transport protocol, as the Kubernetes API names
// it and as the kernel backends program it (one type for both, so the
// planner copies it instead of converting).
#pragma once

#include <cstdint>

#include "base/format.h"

namespace sb {

enum class Protocol : uint8_t { kTCP, kUDP, kSCTP };
const char* to_string(Protocol protocol);       // "TCP", "UDP", "SCTP"
uint8_t ip_protocol_number(Protocol protocol);  // IPPROTO_TCP, ...

}  // namespace sb

template <>
struct fmt::formatter<sb::Protocol> : sb::FormatAsText<sb::Protocol> {};
