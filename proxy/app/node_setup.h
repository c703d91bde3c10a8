// The node settings kube-proxy makes when it starts: the conntrack sysctls
// (cmd/kube-proxy conntrack.SetSysctls) and the process's oom_score_adj.
//
// A value the kernel refuses, or a file that cannot be read or written (no
// nf_conntrack, a read-only /sys, a network namespace where the sysctl is
// read-only), is reported as one warning line and never stops the daemon:
// the proxy works with the kernel's own limits. The roots of /proc and /sys
// are parameters so unit tests write into a temporary folder.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "proxy/options/options.h"

namespace sb::proxy {

struct KernelPaths {
    std::string proc = "/proc";
    std::string sys = "/sys";
};

// kube-proxy's nf_conntrack_max: max_per_core * cpus, at least `min`, at
// most 1048576 (its cap for many-core machines); 0 (leave the kernel's
// limit alone) when max_per_core is 0.
int64_t conntrack_max(const ConntrackOptions& conntrack, int cpus);

// The node's online CPUs, from <sys>/devices/system/cpu/online ("0-3,6",
// not this process's cpuset: the limit is node-wide); else
// std::thread::hardware_concurrency().
int count_cpus(const KernelPaths& paths);

// Applies `conntrack` as kube-proxy does, under <proc>/sys/net/netfilter:
// nf_conntrack_max only when it raises the current value, then the module's
// hashsize (<sys>/module/nf_conntrack/parameters/hashsize) to max/4 when it
// is smaller; the TCP and UDP timeouts (whole seconds) when they differ from
// the current values, 0 leaving them alone; nf_conntrack_tcp_be_liberal = 1
// when asked. Returns the warning lines; logs what it changed at info.
std::vector<std::string> apply_conntrack_settings(const ConntrackOptions& conntrack,
                                                  const KernelPaths& paths);

// Writes <proc>/self/oom_score_adj. Returns the warning lines (none or one).
std::vector<std::string> apply_oom_score_adj(int value, const KernelPaths& paths);

// Raises this process's soft RLIMIT_NOFILE to its hard limit, as Go's
// runtime does at start for kube-proxy and CoreDNS: every socket (DNS TCP
// clients, forwarded queries, HTTP connections) draws on it, and a
// container's soft default (often 1024) would cap the DNS server far below
// its own bounds. Returns the warning lines (none or one). Idempotent.
std::vector<std::string> raise_open_file_limit();

// What run() does before the daemon starts: the conntrack settings, and,
// unless options.init_only (a process about to exit has no use for them;
// kube-proxy's --init-only does not set them either), the oom_score_adj and
// the open file limit.
std::vector<std::string> apply_node_settings(const Options& options, const KernelPaths& paths);

}  // namespace sb::proxy
