// The bootstrap trap of a node proxy: reaching the API server through the
// `kubernetes` Service's ClusterIP. That address only answers once a proxy
// has programmed it, so it works while rules from an earlier run are still
// in the kernel and fails on a fresh or rebooted node, where the proxy then
// never gets its first LIST. kube-proxy has the same trap; switchboard
// names it once it can see it (the Services are known), so an operator
// learns it before the next reboot instead of after.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "watch/store.h"

namespace sb::proxy {

// The one-line warning when `api_host` (the in-cluster KUBERNETES_SERVICE_HOST
// the daemon used; empty when it used a kubeconfig or --master) is the
// ClusterIP of a Service in `snapshot`; nullopt otherwise. Pure.
std::optional<std::string> service_address_warning(const watch::Snapshot& snapshot,
                                                   std::string_view api_host);

}  // namespace sb::proxy
