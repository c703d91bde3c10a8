#include "rules/dns_local/addresses.h"

#include <algorithm>

#include <fmt/format.h>

namespace sb::rules::dns_local {

Status validate_addresses(const std::vector<IpAddress>& addresses) {
    if (addresses.size() > kMaxAddresses) {
        return make_error(
            ErrorCode::kInvalidArgument,
            fmt::format("at most {} addresses, got {}", kMaxAddresses, addresses.size()));
    }
    for (size_t i = 0; i < addresses.size(); ++i) {
        const IpAddress& a = addresses[i];
        const char* why = a.is_unspecified()                 ? "unspecified"
                          : a.is_loopback()                  ? "a loopback address"
                          : a.is_multicast()                 ? "a multicast address"
                          : (a.is_v6() && a.is_link_local()) ? "an IPv6 link-local address"
                                                             : nullptr;
        if (why) {
            return make_error(ErrorCode::kInvalidArgument, fmt::format("{} is {}", a, why));
        }
        if (std::find(addresses.begin(), addresses.begin() + static_cast<long>(i), a) !=
            addresses.begin() + static_cast<long>(i)) {
            return make_error(ErrorCode::kInvalidArgument, fmt::format("{} is given twice", a));
        }
    }
    return {};
}

}  // namespace sb::rules::dns_local
