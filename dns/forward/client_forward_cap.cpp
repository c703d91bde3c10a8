#include "dns/forward/client_forward_cap.h"

namespace sb::dns {

bool ClientForwardCap::acquire(const IpAddress& client) {
    uint32_t& count = outstanding_[client];
    if (limit_ > 0 && count >= limit_) return false;
    ++count;
    return true;
}

void ClientForwardCap::release(const IpAddress& client) {
    auto it = outstanding_.find(client);
    if (it == outstanding_.end()) return;
    if (--it->second == 0) outstanding_.erase(it);
}

}  // namespace sb::dns
