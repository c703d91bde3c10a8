// The kubelet settings a Pod's resolv.conf depends on, for `pod-dns` and
// `lookup`: --cluster-dns, --cluster-domain and --node-resolv-conf (kubelet's
// own flag names, --resolv-conf being kubelet's spelling of the last), over
// the values of the kubelet's KubeletConfiguration file (--kubelet-config,
// kubeadm's /var/lib/kubelet/config.yaml by default) when there is one.
// Called from main's thread only.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "dns/search_path/pod_resolv_conf.h"
#include "proxy/options/command_options.h"

namespace sb::proxy {

inline constexpr const char* kDefaultKubeletConfig = "/var/lib/kubelet/config.yaml";

struct KubeletDnsFlags {
    std::optional<std::string> cluster_dns;     // "IP[,IP]"
    std::optional<std::string> cluster_domain;  // kubeadm's cluster.local when unset
    std::optional<std::string> resolv_conf;     // kubelet's /etc/resolv.conf when unset
    std::optional<std::string> kubelet_config;  // explicit: must be readable
};
void add_kubelet_dns_flags(std::vector<CommandOption>& options, KubeletDnsFlags& flags);

// What a KubeletConfiguration file says of the three settings (absent: the
// file does not set it).
struct KubeletConfigDns {
    std::optional<std::vector<std::string>> cluster_dns;
    std::optional<std::string> cluster_domain;
    std::optional<std::string> resolv_conf;
};

// Reads them from the file's text (YAML or JSON); kInvalidArgument naming
// --kubelet-config and `path` for text that is not a mapping or fields of
// the wrong shape. Never throws.
Result<KubeletConfigDns> parse_kubelet_config_dns(const std::string& text, const std::string& path);

// The settings, with the node resolv.conf read. kInvalidArgument naming the
// flag or file: an address that is not one, an unreadable file, a
// KubeletConfiguration that is not YAML.
Result<dns::KubeletDnsSettings> finish_kubelet_dns_flags(const KubeletDnsFlags& flags);

}  // namespace sb::proxy
