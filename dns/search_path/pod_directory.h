// PodDirectory: which Pod of this node a query's source address belongs to,
// for the server-side search path (dns/search_path/autopath.h, docs/dns.md "Search path
// on the server"). Built whole from the node's Pods (~110 at most on a
// node, so a rebuild is cheap) and published like the zone; never changed
// after build().
//
// Thread safety: immutable once built; find() from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/containers/published.h"
#include "base/ip.h"
#include "watch/objects.h"

namespace sb::dns {

// A Pod as a DNS client.
struct PodClient {
    std::string ns;  // its namespace
    // Its resolver walks kubelet's ClusterFirst search list (<ns>.svc.<zone>,
    // svc.<zone>, <zone>, then the node's search domains): dnsPolicy
    // ClusterFirst, or ClusterFirstWithHostNet on a Pod that is not
    // hostNetwork (kubelet treats it as ClusterFirst), and no
    // dnsConfig.searches. False: a list of its own (dnsPolicy Default or
    // None, or custom searches), which the server does not walk.
    bool default_search = false;
    bool operator==(const PodClient&) const = default;
};

class PodDirectory {
  public:
    // The addresses (status.podIPs) of the Pods of `pods` on node
    // `node_name` (an empty name enters none). Never entered: hostNetwork
    // Pods (their address is the node's, shared by every such Pod) and Pods
    // in phase Succeeded or Failed (their address may already be another
    // Pod's). Of live Pods sharing an address, the one created last holds
    // it (a reused Pod IP maps to the new Pod); when the newest two were
    // created at the same time, the address is ambiguous and not entered.
    static std::shared_ptr<const PodDirectory> build(const std::vector<const watch::Pod*>& pods,
                                                     std::string_view node_name);

    // The Pod `address` belongs to; null when none (another node, a
    // hostNetwork Pod, an ambiguous or unknown address). An IPv4-mapped
    // IPv6 address (a client of a dual-stack socket) is looked up as IPv4.
    const PodClient* find(const IpAddress& address) const;

    size_t size() const { return entries_.size(); }
    // Addresses left out because two Pods created at one time hold them.
    size_t ambiguous() const { return ambiguous_; }

  private:
    std::vector<std::pair<IpAddress, PodClient>> entries_;  // sorted by address, unique
    size_t ambiguous_ = 0;
};

using PodDirectoryHolder = Published<PodDirectory>;

}  // namespace sb::dns
