// The rolling update of a node's daemon (docs/daemon.md, "Restarts and
// rollouts"): the kernel lock, and the hand-over of the listening sockets
// from the daemon that holds it to the one that starts beside it.
//
// Both live in the node state folder (node_state.h; mode 0700, a hostPath
// no other Pod mounts): `kernel.lock`, flocked for as long as a daemon
// programs the kernel (the kernel drops the lock of a dead process), and
// `handover.sock`, a unix SOCK_SEQPACKET socket the lock's holder serves.
// A starting daemon that finds the lock taken asks handover.sock for the
// sockets ("handover", no fds); the holder stops syncing, answers
// ("sockets", its listening sockets with their names; fd_passing.h),
// releases the lock and stops serving. Only a peer of uid 0 or of the
// daemon's own uid is answered (SO_PEERCRED).
//
// Thread safety: KernelLock for one thread; HandoverServer's callbacks run
// on its thread; request_handover() from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/listeners/fd_passing.h"
#include "base/result.h"

namespace sb::proxy {

// How long a starting daemon waits for the old one's answer (it finishes
// the sync in progress first) and then for the lock.
inline constexpr std::chrono::seconds kHandoverTimeout{30};

class KernelLock {
  public:
    // Opens (creates, mode 0600) `folder`/kernel.lock, unlocked.
    static Result<KernelLock> open(const std::string& folder);
    KernelLock(KernelLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    KernelLock& operator=(KernelLock&&) = delete;
    ~KernelLock();  // releases the lock with the file

    bool try_lock();
    // Polls every 100 ms; false when `timeout` passed first.
    bool lock_within(std::chrono::milliseconds timeout);
    void unlock();

  private:
    explicit KernelLock(int fd) : fd_(fd) {}
    int fd_ = -1;
};

// Asks the daemon serving `folder`/handover.sock for its listening sockets
// (the caller owns them). kUnavailable when nothing answers there; an
// error too when the answer takes longer than `timeout`.
Result<std::vector<listeners::NamedFd>> request_handover(const std::string& folder,
                                                         std::chrono::milliseconds timeout);

class HandoverServer {
  public:
    // Stops syncing and returns the sockets to pass (still the caller's);
    // then, once they are sent, `sent()`. Both run on the server's thread.
    using Give = std::function<std::vector<listeners::NamedFd>()>;
    using Sent = std::function<void()>;

    HandoverServer() = default;
    ~HandoverServer();  // stop()
    HandoverServer(const HandoverServer&) = delete;
    HandoverServer& operator=(const HandoverServer&) = delete;

    // Serves `folder`/handover.sock (replacing a stale one) until one hand-
    // over is done or stop().
    Status start(const std::string& folder, Give give, Sent sent);
    void stop();  // idempotent; waits for a hand-over in progress

  private:
    void serve();
    bool answer(int connection);  // true once the sockets were sent

    int listener_ = -1;
    std::string path_;
    Give give_;
    Sent sent_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace sb::proxy
