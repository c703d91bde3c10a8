#include "proxy/app/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "base/listeners/fd_passing.h"
#include "base/listeners/socket_pool.h"
#include "base/log.h"
#include "proxy/app/exit_codes.h"

namespace sb::proxy {

std::chrono::milliseconds RestartPolicy::delay_after(std::chrono::steady_clock::duration uptime) {
    if (uptime >= kQuickDeath) {
        quick_deaths_ = 0;
        return std::chrono::milliseconds(0);
    }
    quick_deaths_ = std::min(quick_deaths_ + 1, 32u);
    if (quick_deaths_ < kQuickDeathsBeforeDelay) return std::chrono::milliseconds(0);
    const unsigned doublings = std::min(quick_deaths_ - kQuickDeathsBeforeDelay, 4u);
    return std::min(std::chrono::milliseconds(1000 << doublings), kMaxRestartDelay);
}

namespace {

using Clock = std::chrono::steady_clock;
using listeners::NamedFd;

// Exec's side of a fork: the held sockets become fds 3.., the channel
// follows them, and the environment says so. The supervisor is single-
// threaded, so the child may allocate before exec. Never returns.
[[noreturn]] void exec_daemon(const std::vector<std::string>& command,
                              const std::vector<NamedFd>& held, int channel) {
    // The daemon must not outlive its supervisor (a test's, or a killed one).
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    const int count = static_cast<int>(held.size());
    // Out of the way of the targets first, so no dup2 overwrites a source.
    const int above = 3 + count + 1;
    std::vector<int> moved;
    for (const auto& named : held) moved.push_back(::fcntl(named.fd, F_DUPFD_CLOEXEC, above));
    const int moved_channel = ::fcntl(channel, F_DUPFD_CLOEXEC, above);
    std::string names;
    for (int i = 0; i < count; ++i) {
        ::dup2(moved[static_cast<size_t>(i)], 3 + i);  // dup2 clears close-on-exec
        names += (i ? ":" : "") + held[static_cast<size_t>(i)].name;
    }
    ::dup2(moved_channel, 3 + count);
    if (count > 0) {
        ::setenv("LISTEN_FDS", std::to_string(count).c_str(), 1);
        ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
        ::setenv("LISTEN_FDNAMES", names.c_str(), 1);
    } else {
        for (const char* name : {"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"}) ::unsetenv(name);
    }
    ::setenv(listeners::kSupervisorFdVariable, std::to_string(3 + count).c_str(), 1);
    std::vector<char*> argv;
    for (const auto& word : command) argv.push_back(const_cast<char*>(word.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "switchboard supervise: %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
}

class Supervisor {
  public:
    explicit Supervisor(std::vector<std::string> command) : command_(std::move(command)) {}
    ~Supervisor() {
        drop_held();
        for (int fd : {signals_, channel_[0], channel_[1]}) {
            if (fd >= 0) ::close(fd);
        }
    }

    int run() {
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, channel_) != 0) {
            print_error(fmt::format("supervise: socketpair: {}", std::strerror(errno)));
            return kExitFailure;
        }
        sigset_t mask;
        sigemptyset(&mask);
        for (int signal : {SIGTERM, SIGINT, SIGCHLD}) sigaddset(&mask, signal);
        ::sigprocmask(SIG_BLOCK, &mask, nullptr);
        signals_ = ::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (signals_ < 0) {
            print_error(fmt::format("supervise: signalfd: {}", std::strerror(errno)));
            return kExitFailure;
        }
        start();
        while (!exit_code_) {
            // Nothing may end PID 1 but the daemon's exit: a failure of one
            // round is logged and the next round runs.
            try {
                round();
            } catch (const std::exception& error) {
                log::error("supervise: {}", error.what());
            }
        }
        return *exit_code_;
    }

  private:
    void start() {
        restart_at_.reset();
        const pid_t pid = ::fork();
        if (pid == 0) exec_daemon(command_, held_, channel_[1]);
        if (pid < 0) {
            log::error("supervise: fork: {}; retrying in 1s", std::strerror(errno));
            restart_at_ = Clock::now() + std::chrono::seconds(1);
            return;
        }
        child_ = pid;
        started_ = Clock::now();
    }

    void round() {
        int timeout = -1;
        if (restart_at_) {
            auto left = std::chrono::ceil<std::chrono::milliseconds>(*restart_at_ - Clock::now());
            timeout = static_cast<int>(std::max<int64_t>(0, left.count()));
        }
        pollfd fds[2] = {{signals_, POLLIN, 0}, {channel_[0], POLLIN, 0}};
        if (::poll(fds, 2, timeout) < 0 && errno != EINTR) {
            log::error("supervise: poll: {}", std::strerror(errno));
            ::sleep(1);  // never spin
        }
        if ((fds[0].revents & POLLIN) != 0) read_signals();
        if (!exit_code_ && (fds[1].revents & POLLIN) != 0) read_sockets();
        if (!exit_code_ && restart_at_ && Clock::now() >= *restart_at_) start();
    }

    void read_signals() {
        signalfd_siginfo info{};
        while (::read(signals_, &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
            const int signal = static_cast<int>(info.ssi_signo);
            if (signal == SIGCHLD) {
                reap();
                continue;
            }
            terminating_ = true;
            if (child_ > 0) {
                ::kill(child_, signal);
            } else {
                exit_code_ = kExitOk;  // waiting to restart: nothing runs
            }
        }
    }

    void reap() {
        int status = 0;
        pid_t pid;
        while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid != child_) continue;  // an orphan PID 1 inherited
            child_ = -1;
            if (WIFEXITED(status)) {
                exit_code_ = WEXITSTATUS(status);
                return;
            }
            const int signal = WTERMSIG(status);
            if (terminating_) {
                exit_code_ = 128 + signal;
                return;
            }
            const auto uptime = Clock::now() - started_;
            const auto delay = policy_.delay_after(uptime);
            log::warn(
                "supervise: the daemon died by signal {} ({}) after {:.1f}s; restarting{} "
                "with {} sockets",
                signal, ::strsignal(signal), std::chrono::duration<double>(uptime).count(),
                delay.count() ? fmt::format(" in {}s", delay.count() / 1000.0) : "", held_.size());
            restart_at_ = Clock::now() + delay;
        }
    }

    // One message of the daemon: its whole set of listening sockets.
    void read_sockets() {
        auto received = listeners::receive_fds(channel_[0]);
        if (!received) {
            log::warn("supervise: {}", received.error().describe());
            return;
        }
        if (received->kind != "set") {
            for (const auto& named : received->fds) ::close(named.fd);
            log::warn("supervise: a message of kind {} ignored", received->kind);
            return;
        }
        drop_held();
        held_ = std::move(received->fds);
    }

    void drop_held() {
        for (const auto& named : held_) ::close(named.fd);
        held_.clear();
    }

    const std::vector<std::string> command_;
    int channel_[2] = {-1, -1};  // [0] the supervisor's end, [1] the daemon's
    int signals_ = -1;
    std::vector<NamedFd> held_;  // at most kMaxPassedFds (one message)
    RestartPolicy policy_;
    pid_t child_ = -1;
    Clock::time_point started_;
    std::optional<Clock::time_point> restart_at_;
    bool terminating_ = false;
    std::optional<int> exit_code_;
};

}  // namespace

std::optional<int> run_supervise_command(const std::vector<std::string>& args) {
    if (args.empty() || args[0] != "supervise") return std::nullopt;
    if (args.size() < 3 || args[1] != "--") {
        print_error("supervise: usage: switchboard supervise -- COMMAND [ARGS...]");
        return kExitUsage;
    }
    try {
        Supervisor supervisor(std::vector<std::string>(args.begin() + 2, args.end()));
        return supervisor.run();
    } catch (const std::exception& error) {
        print_error(fmt::format("supervise: {}", error.what()));
        return kExitFailure;
    }
}

}  // namespace sb::proxy
