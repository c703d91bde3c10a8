// The node's state folder: what outlives the daemon on the node (the warm
// DNS state, the kernel lock, the socket hand-over), under --state-dir, a
// hostPath on tmpfs (/run/switchboard: a reboot starts from the API server).
//
// One folder per network namespace, `<state-dir>/netns-<cookie>`: the kernel
// state a daemon programs is its network namespace's, so two daemons in two
// namespaces never share a lock or a state, and a state is never read in a
// namespace it does not describe. The cookie (SO_NETNS_COOKIE) is unique for
// the boot and never reused, unlike the namespace's inode number.
// docs/daemon.md, "Node state".
//
// Thread safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace sb::proxy {

// This network namespace's cookie. Error when the kernel has none (< 5.14).
Result<uint64_t> network_namespace_cookie();

// What the folder holds, each file owned by one part of the daemon.
inline constexpr const char* kDnsStateFile = "dns-zone.state";  // dns/zone/warm_state.h

struct NodeState {
    std::string folder;  // `state_dir`/netns-<cookie>
    // Whose state the folder holds: "boot BOOT-ID netns COOKIE". A file
    // written under another identity (an earlier boot, if the folder is not
    // on tmpfs after all) describes kernel state that is gone.
    std::string identity;
};

// This namespace's folder, created (mode 0700, with `state_dir`) when
// missing. Precondition: `state_dir` is an absolute path. Errors name the
// folder and the cause.
Result<NodeState> open_node_state(const std::string& state_dir);

// --cleanup: removes this namespace's folder and everything in it, then
// `state_dir` itself when that leaves it empty. A missing folder is no error.
Status remove_node_state_folder(const std::string& state_dir);

}  // namespace sb::proxy
