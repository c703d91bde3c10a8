// Names and filters shared by both kernel backends (rules/nftables,
// rules/iptables). Pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "rules/plan.h"

namespace sb::rules {

// "tcp" / "udp" / "sctp" / the number in decimal.
std::string proto_name(uint8_t proto);

// The first `chars` (at most 12) base32 characters of FNV-1a 64 over
// `text`, 5 bits each from the low end. Deterministic across runs and
// builds: chain names derived from it must stay stable between restarts.
std::string base32_hash(std::string_view text, size_t chars);

inline IpFamily family_of(const Prefix& p) {
    return p.family();
}
inline IpFamily family_of(const Endpoint& e) {
    return e.ip.family();
}
inline IpFamily family_of(const IpAddress& a) {
    return a.family();
}

// The items of `family`, in their order (`items`: a std::vector or an
// EndpointList).
template <class Items>
std::vector<typename Items::value_type> of_family(const Items& items, IpFamily family) {
    std::vector<typename Items::value_type> out;
    for (const auto& item : items) {
        if (family_of(item) == family) out.push_back(item);
    }
    return out;
}

}  // namespace sb::rules
