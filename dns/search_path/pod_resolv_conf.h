// The resolv.conf kubelet writes into a Pod (pkg/kubelet/network/dns:
// GetPodDNS), from its dnsPolicy and dnsConfig and kubelet's clusterDNS,
// clusterDomain and resolvConf settings: what `switchboard pod-dns` prints
// and `switchboard lookup` walks (docs/pod-commands.md). Pure.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "dns/search_path/resolv_conf.h"
#include "watch/objects.h"

namespace sb::dns {

// Kubelet's DNS settings (KubeletConfiguration clusterDNS, clusterDomain,
// resolvConf) with the node resolv.conf already read.
struct KubeletDnsSettings {
    std::vector<std::string> cluster_dns;  // empty: kubelet has none
    std::string cluster_domain;            // empty: no cluster search domains
    // resolvConf is "" (kubelet --resolv-conf=""): Default Pods get the
    // local machine's resolver (127.0.0.1, search ".").
    bool resolv_conf_set = true;
    KubeletResolvConf node;  // the resolvConf file, when set
};

// What kubelet writes, in the order it writes it.
struct PodResolvConf {
    std::vector<std::string> searches;
    std::vector<std::string> nameservers;
    std::vector<std::string> options;
    // Kubelet's events for this Pod (MissingClusterDNS, DNSConfigForming):
    // the file is still written.
    std::vector<std::string> warnings;
};

// Kubelet's limit on a Pod's nameservers (MaxDNSNameservers, libc's MAXNS).
inline constexpr size_t kMaxPodNameservers = 3;

// The Pod's resolv.conf. kInvalidArgument for a Pod the API server rejects
// and so no kubelet ever sees (dnsPolicy None without a nameserver); the
// dnsConfig limits the API checks are the decoder's (watch/decode/pod.cpp).
Result<PodResolvConf> compose_pod_resolv_conf(const watch::Pod& pod,
                                              const KubeletDnsSettings& settings);

// The file's text as the container runtime writes it (containerd's
// parseDNSOptions): `search`, one `nameserver` line each, `options`;
// empty parts are left out.
std::string format_resolv_conf(const PodResolvConf& conf);

}  // namespace sb::dns
