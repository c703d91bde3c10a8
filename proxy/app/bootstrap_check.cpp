#include "proxy/app/bootstrap_check.h"

#include <fmt/format.h>

namespace sb::proxy {

std::optional<std::string> service_address_warning(const watch::Snapshot& snapshot,
                                                   std::string_view api_host) {
    if (api_host.empty()) return std::nullopt;
    auto host = IpAddress::parse(api_host);
    if (!host) return std::nullopt;  // a host name is a real address as far as we can tell
    for (const auto& [key, entry] : snapshot.services()) {
        if (!entry->service) continue;
        for (const auto& ip : entry->service->cluster_ips) {
            if (ip != *host) continue;
            return fmt::format(
                "KUBERNETES_SERVICE_HOST={} is the ClusterIP of Service {}/{}: it answers only "
                "while proxy rules from an earlier run are in the kernel, so on a fresh or "
                "rebooted node switchboard cannot reach the API server; set "
                "KUBERNETES_SERVICE_HOST/_PORT to the control plane's real address, or give "
                "--kubeconfig or --config (see docs/migrating-from-kube-proxy.md)",
                api_host, key.ns, key.name);
        }
    }
    return std::nullopt;
}

}  // namespace sb::proxy
