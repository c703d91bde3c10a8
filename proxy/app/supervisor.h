// `switchboard supervise -- COMMAND...`: the container's first process. It
// keeps copies of the daemon's listening sockets and restarts the daemon at
// once when it dies by a signal (a crash, an OOM kill), handing it those
// sockets: queries that arrive meanwhile wait in the sockets' buffers
// instead of being refused. docs/daemon.md, "Restarts and rollouts".
//
// Deliberately small: it reads no configuration and parses nothing but the
// channel's messages (base/listeners/fd_passing.h). It starts COMMAND with
// the sockets it holds as fds 3.. (LISTEN_FDS, LISTEN_FDNAMES, LISTEN_PID,
// as systemd passes them) and its channel's other end
// (SWITCHBOARD_SUPERVISOR_FD), on which the daemon sends the whole set of
// its listening sockets whenever it changes; each set replaces the last.
// It forwards SIGTERM and SIGINT to the daemon, exits with the daemon's
// exit code when the daemon exits, and reaps every child (as PID 1 it
// inherits orphans).
//
// Thread safety: run_supervise_command() runs on the main thread of a
// single-threaded process, with SIGINT and SIGTERM blocked (main()).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace sb::proxy {

// A daemon that dies this soon after its start died "quickly".
inline constexpr std::chrono::seconds kQuickDeath{10};
// After this many quick deaths in a row, restarts wait: 1 s, then twice as
// long each time, at most kMaxRestartDelay.
inline constexpr unsigned kQuickDeathsBeforeDelay = 3;
inline constexpr std::chrono::milliseconds kMaxRestartDelay{8000};

// When to restart a daemon that died by a signal. Pure; one per supervisor.
class RestartPolicy {
  public:
    // The delay before the next start of a daemon that died `uptime` after
    // its start.
    std::chrono::milliseconds delay_after(std::chrono::steady_clock::duration uptime);

  private:
    unsigned quick_deaths_ = 0;
};

// `args` are the words after the program's name. Nothing unless the first
// is `supervise`; else runs `supervise -- COMMAND [ARGS...]` to its end and
// returns the exit code (2 with one line on stderr for a malformed command
// line, 1 when the supervisor cannot start, else the daemon's code; 128+N
// when the daemon dies by signal N after a SIGTERM).
std::optional<int> run_supervise_command(const std::vector<std::string>& args);

}  // namespace sb::proxy
