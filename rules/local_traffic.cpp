#include "rules/local_traffic.h"

#include "rules/naming.h"

namespace sb::rules {

std::vector<LocalMatch> local_matches(const BackendOptions& options, IpFamily family) {
    std::vector<LocalMatch> out;
    switch (options.local_detect_mode) {
        case LocalDetectMode::kClusterCidr:
        case LocalDetectMode::kNodeCidr:
            for (const Prefix& p : of_family(options.cluster_cidrs, family)) {
                out.push_back(LocalMatch{LocalMatch::Kind::kSource, p, {}});
            }
            break;
        case LocalDetectMode::kBridgeInterface:
            out.push_back(LocalMatch{LocalMatch::Kind::kInterface, {}, options.local_interface});
            break;
        case LocalDetectMode::kInterfaceNamePrefix:
            out.push_back(
                LocalMatch{LocalMatch::Kind::kInterfacePrefix, {}, options.local_interface});
            break;
    }
    return out;
}

}  // namespace sb::rules
