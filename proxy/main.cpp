// switchboard's entry point: parse the flags, set up logging and signals,
// hand over to proxy::run(). Exit codes: 0 ok, 1 runtime failure, 2 bad
// flags or configuration (one line on stderr naming the flag or file).
#include <malloc.h>
#include <signal.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/listeners/socket_pool.h"
#include "base/log.h"
#include "proxy/app/exit_codes.h"
#include "proxy/app/run.h"
#include "proxy/app/supervisor.h"
#include "proxy/commands/pod_command_line.h"
#include "proxy/options/flags.h"

namespace {

// glibc gives each thread that allocates its own arena (up to 8 per core),
// and each arena keeps its freed memory: with the watch, planner, backend
// and DNS threads that is about 18 MB of peak RSS at 10k Services
// (docs/daemon.md). With two arenas, which thread landed on which decided
// whether the first sync reused what the first LIST freed: peak RSS at 50k
// Services was 281 or 320 MB by the run. One arena: 281 MB every run, and
// DNS answers as fast (its threads' small blocks come from their tcaches).
// MALLOC_ARENA_MAX in the environment still wins.
void limit_malloc_arenas() {
    constexpr int kMallocArenas = 1;
    if (std::getenv("MALLOC_ARENA_MAX") == nullptr) mallopt(M_ARENA_MAX, kMallocArenas);
}

}  // namespace

int main(int argc, char** argv) {
    limit_malloc_arenas();  // before the first thread starts
    // Before any thread exists, so that every thread inherits the mask and
    // the signals reach proxy::run()'s sigtimedwait only.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);
    // A peer closing a socket mid-write must not kill the daemon.
    signal(SIGPIPE, SIG_IGN);

    // stdout carries `plan` and --dry-run output only; logs go to stderr.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("switchboard"));

    std::vector<std::string> args(argv + 1, argv + argc);
    // The container's first process keeps the daemon's sockets across its
    // restarts (proxy/app/supervisor.h).
    if (auto code = sb::proxy::run_supervise_command(args)) return *code;
    // pod-dns, pod-env and lookup take flags of their own.
    if (auto code = sb::proxy::run_pod_command(args)) return *code;
    auto options = sb::proxy::parse_flags(args, sb::proxy::current_environment());
    if (!options) {
        std::fprintf(stderr, "switchboard: %s\n", options.error().message.c_str());
        return sb::proxy::kExitUsage;
    }
    if (options->command == sb::proxy::Command::kHelp) {
        std::fputs(sb::proxy::usage().c_str(), stdout);
        return sb::proxy::kExitOk;
    }
    if (options->command == sb::proxy::Command::kVersion) {
        std::fputs(sb::proxy::version_text().c_str(), stdout);
        return sb::proxy::kExitOk;
    }
    sb::log::set_level(options->verbosity >= 2 ? "debug" : "info");
    for (const auto& warning : options->warnings) sb::log::warn("{}", warning);
    // Still single-threaded: it reads and unsets the environment.
    for (const auto& warning : sb::listeners::SocketPool::process().inherit_from_environment()) {
        sb::log::warn("{}", warning);
    }
    return sb::proxy::run(*options);
}
