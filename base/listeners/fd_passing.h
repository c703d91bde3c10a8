// Passing listening sockets between processes: the names that travel with
// them (systemd's LISTEN_FDS / LISTEN_FDNAMES at exec, and the messages of
// the supervisor's channel and of the hand-over) and SCM_RIGHTS over a unix
// socket. docs/daemon.md, "Restarts and rollouts".
//
// Every parser here reads bytes from another process (a supervisor, an
// older daemon, whatever set the environment): each refuses anything off
// with one line, and never yields more names than kMaxPassedFds
// (tests/fuzz/fd_names_fuzz.cpp).
//
// Thread safety: free functions without shared state.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::listeners {

// Sockets passed at once (one SCM_RIGHTS message; the kernel's own cap is
// 253). A process holds a few: DNS's per worker and per address, HTTP's.
inline constexpr size_t kMaxPassedFds = 64;
// A name: 1-32 of [A-Za-z0-9._-] (systemd's names may not hold ':').
inline constexpr size_t kMaxFdNameLength = 32;

// A socket and the name that says what it serves ("dns", "http"): for the
// log only; sockets are matched by what the kernel says of them.
struct NamedFd {
    int fd = -1;
    std::string name;
};

bool valid_fd_name(std::string_view name);

// The sockets systemd-style activation passed: LISTEN_PID must be
// `own_pid` (else they are another process's: 0 sockets), LISTEN_FDS a
// count of at most kMaxPassedFds, and LISTEN_FDNAMES (empty when unset)
// `count` names separated by ':', or empty (each named "unknown").
// Returns one name per socket (fds 3, 4, ...).
Result<std::vector<std::string>> parse_listen_fds(std::string_view listen_pid,
                                                  std::string_view listen_fds,
                                                  std::string_view listen_fdnames, pid_t own_pid);

// A channel message: `kind` (a word: "set", "handover"), then one line per
// socket with its name, in the order of the SCM_RIGHTS fds.
std::string encode_fd_message(std::string_view kind, const std::vector<std::string>& names);
struct FdMessage {
    std::string kind;
    std::vector<std::string> names;
};
// Error unless `payload` is such a message naming exactly `fd_count` sockets,
// and unless `fd_count` is at most kMaxPassedFds.
Result<FdMessage> decode_fd_message(std::string_view payload, size_t fd_count);

// Sends one message of `kind` with `fds` (at most kMaxPassedFds) on the
// unix socket `channel` (SOCK_SEQPACKET; blocks at most its SO_SNDTIMEO),
// without SIGPIPE. The fds stay the caller's.
Status send_fds(int channel, std::string_view kind, const std::vector<NamedFd>& fds);
// Receives one message from `channel` (blocks unless it is readable or
// non-blocking). The fds received are close-on-exec and the caller's; on
// any error (truncated, malformed, closed: kUnavailable) none is left open.
struct ReceivedFds {
    std::string kind;
    std::vector<NamedFd> fds;
};
Result<ReceivedFds> receive_fds(int channel);

}  // namespace sb::listeners
