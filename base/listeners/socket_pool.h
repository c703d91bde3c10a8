// SocketPool: the process's listening sockets, so that they outlive the
// process that serves them (docs/daemon.md, "Restarts and rollouts").
//
// It holds the sockets the process was given and not yet taken (offered:
// by its supervisor at exec, systemd-style LISTEN_FDS, or by the daemon it
// takes over from) and the listening sockets it serves (held). Whatever
// binds a listening socket (the DNS server, the HTTP servers) first asks
// for an offered socket of the same type bound to the same address, and
// binds a fresh one only when there is none (listen_on()). Every change of
// the set (offered + held) is sent to the supervisor when there is one
// (SWITCHBOARD_SUPERVISOR_FD), which keeps copies: after a crash the
// sockets stay bound, queries wait in their buffers, and the next process
// is given them.
//
// Ownership: offered sockets are the pool's until adopt() hands one out or
// close_unadopted() closes the rest; held sockets stay their server's (the
// pool only remembers them, by fd and inode, so a reused fd number is never
// passed for a socket that was closed). A server calls release() before it
// closes a held socket.
//
// Thread safety: every method may be called from any thread, except
// inherit_from_environment() (main(), before any thread: it changes the
// environment). Sending to the supervisor blocks at most 1 s.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "base/listeners/fd_passing.h"
#include "base/result.h"

namespace sb::listeners {

// Environment variable naming the fd of the supervisor's channel (a unix
// SOCK_SEQPACKET socket) in the process it starts.
inline constexpr const char* kSupervisorFdVariable = "SWITCHBOARD_SUPERVISOR_FD";

class SocketPool {
  public:
    SocketPool() = default;
    ~SocketPool();  // closes what is still offered and the channel
    SocketPool(const SocketPool&) = delete;
    SocketPool& operator=(const SocketPool&) = delete;

    // The pool the process's servers share.
    static SocketPool& process();

    // Takes the sockets of LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES (fds 3 and
    // up) as offered, and the supervisor's channel, then unsets those
    // variables. Returns the warnings (one line each); a malformed variable
    // is a warning and its sockets are not used.
    std::vector<std::string> inherit_from_environment();
    // Adds sockets to the offered ones (the pool owns them from now on).
    // Those that are not sockets are closed.
    void offer(std::vector<NamedFd> fds);
    // Sends the set to the supervisor on `channel` from now on (the pool
    // owns it). For inherit_from_environment() and tests.
    void set_supervisor_channel(int channel);

    // An offered socket of `type` (SOCK_DGRAM, SOCK_STREAM: a listening
    // one) bound to `address`, taken out of the offered ones; the caller
    // owns it. Nothing for port 0 (that asks for a fresh port). A stream
    // socket is made non-blocking, as bind_socket() makes a new one; a
    // datagram socket is left as it is, since the process that gave it
    // may still be reading it.
    std::optional<int> adopt(const HostPort& address, int type);
    // `fd` is a listening socket this process serves: it goes to the
    // supervisor. Idempotent.
    void hold(int fd, const std::string& name);
    // Before the server closes `fd`: no longer held. Unknown fds are ignored.
    void release(int fd);
    // Once the servers started: the offered sockets nobody adopted are
    // closed (a listen address that was removed must not stay bound).
    // Returns how many.
    size_t close_unadopted();

    // The held sockets were passed to another process that serves them
    // too: they must not be shut down (shutdown() acts on the socket, for
    // every process), only closed. Any thread.
    void mark_shared() { shared_ = true; }
    bool shared() const { return shared_; }

    size_t offered_count() const;
    std::vector<NamedFd> held() const;  // fds stay the servers'

  private:
    struct Entry {
        NamedFd socket;
        ino_t inode = 0;
    };
    void publish_locked();

    mutable std::mutex mutex_;
    std::vector<Entry> offered_;
    std::vector<Entry> held_;
    int channel_ = -1;
    bool warned_full_ = false;
    std::atomic<bool> shared_{false};
};

// A listening socket of `type` on `address` for a server named `name`:
// adopted from `pool` when offered, else freshly bound (bind_socket(): non-
// blocking, SO_REUSEPORT, listening when TCP); held in `pool` either way.
Result<int> listen_on(SocketPool& pool, const HostPort& address, int type, const std::string& name);

}  // namespace sb::listeners
