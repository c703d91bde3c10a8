#include "watch/kube/resources.h"

#include "base/log.h"

namespace sb::watch::kube {

std::vector<ResourceSpec> kube_resources(const std::string& node_name, bool watch_pods) {
    std::vector<ResourceSpec> out = {
        {"services", Kind::kService, "/api/v1/services", ""},
        {"endpointslices", Kind::kEndpointSlice, "/apis/discovery.k8s.io/v1/endpointslices", ""},
    };
    // kube-proxy's nftables mode watches them (MultiCIDRServiceAllocator,
    // on by default from 1.33); a server without the API answers 404.
    ResourceSpec service_cidrs{"servicecidrs", Kind::kServiceCIDR,
                               "/apis/networking.k8s.io/v1/servicecidrs", ""};
    service_cidrs.gates_sync = false;
    service_cidrs.may_be_absent = true;
    out.push_back(std::move(service_cidrs));
    if (!node_name.empty()) {
        out.push_back({"nodes", Kind::kNode, "/api/v1/nodes", "metadata.name=" + node_name});
    }
    if (watch_pods && !node_name.empty()) {
        out.push_back({"pods", Kind::kPod, "/api/v1/pods", "spec.nodeName=" + node_name, false});
    } else if (watch_pods) {
        log::warn("kubernetes source: no node name, so no Pod watch (it would be the cluster's)");
    }
    return out;
}

}  // namespace sb::watch::kube
