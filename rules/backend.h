// Backend: the interface each kernel datapath (nftables, iptables, IPVS)
// implements. A backend is driven by Plans alone and owns only its own
// kernel objects (its tables, its chain prefix, its virtual servers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "rules/conntrack.h"
#include "rules/plan.h"

namespace sb::rules {

// kube-proxy's --detect-local-mode: how a packet is told to come from a Pod
// on this node ("local" traffic), which decides what is masqueraded and
// which traffic may use the local-only endpoints.
enum class LocalDetectMode {
    kClusterCidr,      // source inside cluster_cidrs (kube-proxy's default)
    kNodeCidr,         // source inside this Node's spec.podCIDRs (in cluster_cidrs once resolved)
    kBridgeInterface,  // arrives on local_interface (iifname ==)
    kInterfaceNamePrefix,  // arrives on an interface whose name starts with local_interface
};

// Node-wide settings that come from flags, not from Kubernetes objects.
struct BackendOptions {
    LocalDetectMode local_detect_mode = LocalDetectMode::kClusterCidr;
    // kBridgeInterface: the bridge's name; kInterfaceNamePrefix: the prefix.
    // Validated as an interface name (1-15 characters, no '/', no space).
    std::string local_interface;
    // --cluster-cidr (kClusterCidr), or this Node's podCIDRs (kNodeCidr,
    // resolved by the daemon from the Node object): traffic to a ClusterIP
    // from outside these prefixes is masqueraded. Empty: none is (unless
    // masquerade_all).
    std::vector<Prefix> cluster_cidrs;
    bool masquerade_all = false;  // --masquerade-all
    // --nodeport-addresses: NodePorts answer on local addresses inside
    // these prefixes; empty means every local address of the node.
    std::vector<Prefix> nodeport_addresses;
    // This node's addresses, at most one per family (kube-proxy's nodeIPs:
    // --bind-address, else the Node's first InternalIP, else ExternalIP, of
    // each family). A loadBalancerSourceRange holding one also admits the LB
    // addresses as sources (rules/service_policy.h).
    std::vector<IpAddress> node_ips;
    uint32_t masquerade_mark = 0x4000;  // --masquerade-bit as a mask
    // --iptables-localhost-nodeports (iptables.localhostNodePorts): in
    // iptables mode, IPv4 NodePorts also answer on 127.0.0.0/8 when the
    // NodePort addresses include loopback (kube-proxy's rule; see
    // rules/iptables/render.h localhost_node_ports_effective). Other modes
    // and IPv6 ignore it, as kube-proxy's do.
    bool localhost_node_ports = true;
    std::string ipvs_scheduler = "rr";  // --ipvs-scheduler
    // --ipvs-exclude-cidrs: IPVS virtual servers at these addresses are never
    // changed or deleted (kube-proxy's meaning).
    std::vector<Prefix> ipvs_exclude_cidrs;
    // --ipvs-strict-arp: arp_ignore=1 and arp_announce=2 on all interfaces,
    // so the node never answers ARP for the service addresses on sb-ipvs0.
    bool ipvs_strict_arp = false;
    // --ipvs-tcp-timeout, --ipvs-tcpfin-timeout, --ipvs-udp-timeout: IPVS's
    // connection timeouts in whole seconds; 0 leaves the kernel's.
    uint32_t ipvs_tcp_timeout_seconds = 0;
    uint32_t ipvs_tcp_fin_timeout_seconds = 0;
    uint32_t ipvs_udp_timeout_seconds = 0;
};

struct SyncStats {
    bool full = false;        // the whole ruleset was (re)written
    size_t objects_sent = 0;  // rules/elements/servers in the batch
    size_t services = 0;      // service ports in the plan
    // The UDP conntrack reconcile that followed the rules, per family. A
    // failed one does not fail the sync (the rules are in); the caller counts
    // it and must call sync() again even when the plan did not change.
    std::vector<ConntrackReconcile> conntrack;
    // iptables: service ports and endpoints skipped because their chain name
    // collided with another's (each also logged).
    size_t chain_name_collisions = 0;
    // iptables: 1 when localhost NodePorts are on and this sync could not set
    // net.ipv4.conf.all.route_localnet=1 (the rules are written anyway; every
    // sync tries again until it succeeds; the first failure is logged).
    size_t route_localnet_failures = 0;
    // nftables: netlink answers to an earlier request found in the socket and
    // skipped (not charged to this sync's batch).
    size_t stale_netlink_messages = 0;
    // ipvs: removed real servers still at weight 0 for their open
    // connections. While any are, the caller must call sync() again (the
    // next periodic sync will do) even when the plan did not change: that
    // sync deletes the ones whose connections have ended.
    size_t draining_real_servers = 0;
    // iptables: per family and table ("filter", "nat") that this sync
    // committed, the rules switchboard owns there (its hook rules and its
    // chains' rules) and the rules this sync wrote: kube-proxy's
    // kubeproxy_sync_proxy_rules_iptables_total and _iptables_last.
    struct TableRules {
        IpFamily family = IpFamily::kV4;
        std::string table;
        size_t total = 0;
        size_t written = 0;
    };
    std::vector<TableRules> iptables_rules;
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual const char* name() const = 0;
    // Makes the kernel match `plan`. `previous` is the plan of the last
    // successful sync (nullptr: unknown, read the kernel state back and
    // repair drift). Atomic: on failure the kernel keeps its previous rules.
    // Not thread-safe: one caller (the sync runner) at a time.
    virtual Result<SyncStats> sync(const Plan& plan, const Plan* previous) = 0;
    // The periodic sync's drift check, cheap at any cluster size: false when
    // something outside switchboard removed or replaced what the last sync
    // applied (a flushed ruleset, a table restored from a dump), and the
    // next sync must be full. nftables compares its table's kernel handle.
    // iptables and IPVS have no check this cheap (reading their tables costs
    // what a full sync does): they answer true, and their drift waits for
    // the hourly full sync. Not thread-safe, as sync().
    virtual Result<bool> kernel_intact() { return true; }
    // Removes every kernel object this backend owns. Idempotent.
    virtual Status cleanup() = 0;
    // The rules `plan` would produce, as text for --dry-run; touches nothing.
    virtual Result<std::string> render_text(const Plan& plan) = 0;
};

}  // namespace sb::rules
