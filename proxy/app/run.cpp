#include "proxy/app/run.h"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <optional>

#include "base/listeners/socket_pool.h"
#include "base/log.h"
#include "proxy/app/backend_choice.h"
#include "proxy/app/daemon.h"
#include "proxy/app/exit_codes.h"
#include "proxy/app/handover.h"
#include "proxy/app/node_setup.h"
#include "proxy/app/node_state.h"
#include "proxy/app/one_shot.h"
#include "proxy/app/source_state.h"
#include "rules/dns_local/dns_local.h"

namespace sb::proxy {

namespace {

// This namespace's node state folder and its kernel lock, held.
struct HeldNodeState {
    NodeState node;
    KernelLock lock;
};

// Opens the node state folder and takes its kernel lock. When another
// daemon holds it (a rolling update), first asks it for its listening
// sockets (the pool adopts them), then waits for the lock it releases.
// Nothing (one warning) when the folder cannot be used: the daemon runs
// without node state. Error when the lock stays taken.
Result<std::optional<HeldNodeState>> take_node_state(const Options& options) {
    if (options.state_dir.empty()) return std::optional<HeldNodeState>{};
    auto node = open_node_state(options.state_dir);
    auto lock = node ? KernelLock::open(node->folder) : Result<KernelLock>(node.error());
    if (!lock) {
        log::warn("--state-dir: {}; running without node state", lock.error().describe());
        return std::optional<HeldNodeState>{};
    }
    HeldNodeState state{*node, std::move(*lock)};
    if (state.lock.try_lock()) return std::optional<HeldNodeState>(std::move(state));
    auto sockets = request_handover(state.node.folder, kHandoverTimeout);
    if (sockets) {
        log::info("took over {} listening sockets from the daemon that programs the kernel",
                  sockets->size());
        listeners::SocketPool::process().offer(std::move(*sockets));
    } else {
        log::info("another daemon programs the kernel ({}); waiting up to {}s for its lock",
                  sockets.error().describe(), kHandoverTimeout.count());
    }
    if (!state.lock.lock_within(kHandoverTimeout)) {
        return make_error(ErrorCode::kUnavailable,
                          fmt::format("{}/kernel.lock: still held by another daemon after {}s",
                                      state.node.folder, kHandoverTimeout.count()));
    }
    return std::optional<HeldNodeState>(std::move(state));
}

// A hand-over asked by the next daemon, between the hand-over thread and
// the main thread, which alone drives the Daemon.
struct Takeover {
    std::mutex mutex;
    std::condition_variable changed;
    bool asked = false;  // the next daemon asked
    bool given = false;  // syncs stopped: `sockets` are ready
    bool sent = false;   // sent, lock released
    std::vector<listeners::NamedFd> sockets;

    void set(bool Takeover::*flag) {
        std::lock_guard lock(mutex);
        this->*flag = true;
        changed.notify_all();
    }
    bool is(bool Takeover::*flag) {
        std::lock_guard lock(mutex);
        return this->*flag;
    }
};

// Serves until SIGINT or SIGTERM, or until the next daemon takes over:
// then stops syncing, passes the sockets, stops serving and idles until
// the signal (a DaemonSet container that exits is restarted).
void serve(Daemon& daemon, std::optional<HeldNodeState>& state) {
    Takeover takeover;
    HandoverServer handover;
    if (state) {
        auto give = [&takeover] {
            std::unique_lock lock(takeover.mutex);
            takeover.asked = true;
            takeover.changed.notify_all();
            takeover.changed.wait_for(lock, kHandoverTimeout, [&] { return takeover.given; });
            return takeover.sockets;
        };
        auto sent = [&takeover, &state] {
            state->lock.unlock();
            takeover.set(&Takeover::sent);
        };
        if (auto status = handover.start(state->node.folder, give, sent); !status) {
            log::warn("{}; a rolling update will not take the sockets over",
                      status.error().describe());
        }
    }
    const auto asked = [&takeover] { return takeover.is(&Takeover::asked); };
    bool signalled = !wait_unless_signalled(asked);
    if (signalled) {
        // The lameduck doubles as a hand-over window: a daemon started
        // meanwhile (a stop, then a start) takes the sockets over as in a
        // rolling update, so no query is refused in between.
        daemon.lameduck(asked);
        if (!asked()) {
            takeover.set(&Takeover::given);  // a hand-over asked from now gets nothing
            handover.stop();
            return;
        }
    }
    daemon.stop_syncing();
    listeners::SocketPool::process().mark_shared();
    {
        std::lock_guard lock(takeover.mutex);
        takeover.sockets = listeners::SocketPool::process().held();
        takeover.given = true;
        takeover.changed.notify_all();
    }
    const auto sent = [&takeover] { return takeover.is(&Takeover::sent); };
    if (signalled) {
        // Bounded: the signal is spent, and the next daemon may die mid-way.
        std::unique_lock lock(takeover.mutex);
        takeover.changed.wait_for(lock, kHandoverTimeout, [&takeover] { return takeover.sent; });
    } else {
        signalled = !wait_unless_signalled(sent);
    }
    handover.stop();
    daemon.stop_serving();
    log::info("handed over to the next daemon; idle until SIGTERM");
    if (!signalled) wait_unless_signalled([] { return false; });
}

// The daemon in the mode this kernel can run, until SIGINT or SIGTERM; then
// the Corefile's lameduck, and a stop that leaves the rules in place.
int run_daemon(const Options& options) {
    Options in_use = options;
    in_use.proxy_mode = mode_in_use(options.proxy_mode);
    auto factory = backend_factory(in_use.proxy_mode);
    if (!factory) return report_failure(factory.error());

    // kube-proxy's start-up node settings; --init-only stops after them.
    // The daemon applies them once it has started, so that a bad flag or
    // source is still reported as its one line.
    auto apply_settings = [&options] {
        for (const auto& warning : apply_node_settings(options, KernelPaths{})) {
            log::warn("{}", warning);
        }
    };
    if (options.init_only) {
        apply_settings();
        return kExitOk;
    }

    // Without --dns-local-address, a link and notrack table left by an earlier
    // run with it would keep the kube-dns ClusterIP local and untracked (so
    // never DNATed) with nothing answering: removing the flag is the rollback.
    if (options.dns_local_addresses.empty()) {
        if (auto status = rules::dns_local::cleanup(); !status) {
            log::warn("removing the node-local DNS addresses of an earlier run: {}",
                      status.error().describe());
        }
    }
    auto state = take_node_state(options);
    if (!state) return report_failure(state.error());
    Daemon daemon(in_use, *factory,
                  *state ? std::optional<NodeState>((*state)->node) : std::nullopt);
    if (auto status = daemon.start(); !status) {
        daemon.stop();
        return report_failure(status.error());
    }
    apply_settings();
    serve(daemon, *state);
    daemon.stop();
    return kExitOk;
}

}  // namespace

int run(const Options& options) {
    if (options.command == Command::kPlan) return run_plan(options);
    if (options.cleanup_kube_proxy) {
        const int code = run_cleanup_kube_proxy();
        if (code != kExitOk || !options.cleanup) return code;
    }
    if (options.cleanup) return run_cleanup(options);
    // What the asked mode would program, whether or not this kernel could
    // take it.
    if (options.dry_run) return run_dry_run(options);
    return run_daemon(options);
}

}  // namespace sb::proxy
