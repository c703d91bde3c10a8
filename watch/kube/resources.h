// The resources the Kubernetes source lists and watches, and with which
// field selectors: what RBAC must grant (deploy/switchboard.yaml) and what
// the Store holds once synced (docs/kubernetes-source.md). Pure.
#pragma once

#include <string>
#include <vector>

#include "watch/kube/reflector.h"

namespace sb::watch::kube {

// Services, EndpointSlices and ServiceCIDRs (which may be absent and gate
// nothing: ResourceSpec::may_be_absent), always; this node's Node when `node_name` is
// set; the Pods scheduled to this node (spec.nodeName=node_name) when
// `watch_pods` too. A Pod watch without a node name would be the whole
// cluster's Pods: none is made, and a warning says so.
std::vector<ResourceSpec> kube_resources(const std::string& node_name, bool watch_pods);

}  // namespace sb::watch::kube
