#include "proxy/app/backend_choice.h"

#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "base/log.h"
#include "rules/iptables/iptables_backend.h"
#include "rules/ipvs/ipvs_backend.h"
#include "rules/nftables/nftables_backend.h"

namespace sb::proxy {

Result<BackendFactory> backend_factory(ProxyMode mode) {
    if (mode == ProxyMode::kNftables) {
        return BackendFactory([](const rules::BackendOptions& options) {
            return rules::nftables::make_backend(options);
        });
    }
    if (mode == ProxyMode::kIptables) {
        return BackendFactory([](const rules::BackendOptions& options) {
            return rules::iptables::make_backend(options);
        });
    }
    return BackendFactory(
        [](const rules::BackendOptions& options) { return rules::ipvs::make_backend(options); });
}

ProxyMode mode_in_use(ProxyMode asked) {
    if (asked != ProxyMode::kIpvs || rules::ipvs::ipvs_available()) return asked;
    log::warn(
        "--proxy-mode=ipvs: this kernel has no IPVS (no ip_vs module); running in nftables "
        "mode");
    return ProxyMode::kNftables;
}

std::vector<Prefix> primary_node_prefixes(const watch::Snapshot& snapshot,
                                          const std::string& node_name) {
    std::vector<Prefix> prefixes;
    const watch::Node* node = snapshot.node(node_name);
    if (!node) return prefixes;
    bool have_v4 = false;
    bool have_v6 = false;
    for (const auto& address : node->addresses) {
        if (address.type != "InternalIP") continue;
        auto ip = IpAddress::parse(address.address);
        if (!ip) continue;
        bool& have = ip->is_v4() ? have_v4 : have_v6;
        if (have) continue;
        have = true;
        prefixes.emplace_back(*ip, ip->is_v4() ? 32 : 128);
    }
    return prefixes;
}

namespace {

// kube-proxy's nodeIPs (cmd/kube-proxy detectNodeIPs): per family the
// Node's first InternalIP, else its first ExternalIP; a specified
// --bind-address replaces its family's. Sorted by family (IPv4 first).
std::vector<IpAddress> node_ips(const watch::Snapshot& snapshot, const Options& options) {
    std::optional<IpAddress> by_family[2];
    auto slot = [](const IpAddress& ip) { return ip.is_v4() ? 0 : 1; };
    if (const watch::Node* node = snapshot.node(options.node_name)) {
        for (const char* type : {"InternalIP", "ExternalIP"}) {
            for (const auto& address : node->addresses) {
                auto ip = IpAddress::parse(address.address);
                if (address.type != type || !ip || by_family[slot(*ip)]) continue;
                by_family[slot(*ip)] = *ip;
            }
        }
    }
    if (!options.bind_address.is_unspecified()) {
        by_family[slot(options.bind_address)] = options.bind_address;
    }
    std::vector<IpAddress> ips;
    for (const auto& ip : by_family) {
        if (ip) ips.push_back(*ip);
    }
    return ips;
}

}  // namespace

rules::BackendOptions resolved_backend_options(const Options& options,
                                               const watch::Snapshot& snapshot) {
    rules::BackendOptions backend = options.backend;
    backend.node_ips = node_ips(snapshot, options);
    if (options.nodeport_primary) {
        backend.nodeport_addresses = primary_node_prefixes(snapshot, options.node_name);
        // The node's primary addresses hold no loopback. While they are
        // unknown (every local address, above) localhost NodePorts stay off
        // too: they would set route_localnet, which is never set back.
        backend.localhost_node_ports = false;
    }
    if (backend.local_detect_mode == rules::LocalDetectMode::kNodeCidr) {
        const watch::Node* node = snapshot.node(options.node_name);
        backend.cluster_cidrs = node ? node->pod_cidrs : std::vector<Prefix>{};
    }
    return backend;
}

bool node_derived_options_differ(const rules::BackendOptions& before,
                                 const rules::BackendOptions& now) {
    return before.nodeport_addresses != now.nodeport_addresses ||
           before.cluster_cidrs != now.cluster_cidrs || before.node_ips != now.node_ips;
}

void log_resolution(const Options& options, const rules::BackendOptions& backend) {
    if (options.nodeport_primary && backend.nodeport_addresses.empty()) {
        log::warn(
            "NodePort addresses \"primary\" (--nodeport-addresses=primary, or an empty one in "
            "nftables mode): Node {} has no InternalIP (or is unknown); NodePorts answer on "
            "every local address",
            options.node_name);
    }
    if (backend.local_detect_mode != rules::LocalDetectMode::kNodeCidr) return;
    if (backend.cluster_cidrs.empty()) {
        log::warn(
            "--detect-local-mode=NodeCIDR: Node {} has no spec.podCIDRs (or is unknown); no "
            "traffic counts as local until it has",
            options.node_name);
        return;
    }
    log::info("--detect-local-mode=NodeCIDR: local traffic comes from {}",
              fmt::join(backend.cluster_cidrs, ","));
}

}  // namespace sb::proxy
