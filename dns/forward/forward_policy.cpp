#include "dns/forward/forward_policy.h"

#include <numeric>
#include <utility>

namespace sb::dns {

std::vector<size_t> upstream_order(UpstreamPolicy policy, size_t count, uint64_t turn,
                                   size_t preferred, const std::function<uint64_t()>& random) {
    std::vector<size_t> order(count);
    std::iota(order.begin(), order.end(), size_t{0});
    if (count < 2) return order;
    switch (policy) {
        case UpstreamPolicy::kSequential:
            break;
        case UpstreamPolicy::kPreferred:
            for (size_t i = 0; i < count; ++i) order[i] = (preferred + i) % count;
            break;
        case UpstreamPolicy::kRoundRobin: {
            size_t first = static_cast<size_t>(turn % count);
            order.erase(order.begin() + static_cast<std::ptrdiff_t>(first));
            order.insert(order.begin(), first);
            break;
        }
        case UpstreamPolicy::kRandom:
            // Fisher-Yates: every permutation equally likely.
            for (size_t i = count - 1; i > 0; --i) {
                std::swap(order[i], order[static_cast<size_t>(random() % (i + 1))]);
            }
            break;
    }
    return order;
}

UpstreamPick pick_upstream(const std::vector<size_t>& order, size_t position,
                           const std::function<bool(size_t)>& down, uint64_t random) {
    for (size_t step = 0; step < order.size(); ++step) {
        size_t at = (position + step) % order.size();
        if (!down(order[at])) return {order[at], (at + 1) % order.size(), false};
    }
    return {order[static_cast<size_t>(random % order.size())], position, true};
}

}  // namespace sb::dns
