#include "proxy/app/run.h"

#include "base/log.h"
#include "proxy/app/backend_choice.h"
#include "proxy/app/daemon.h"
#include "proxy/app/exit_codes.h"
#include "proxy/app/node_setup.h"
#include "proxy/app/one_shot.h"
#include "proxy/app/source_state.h"
#include "rules/dns_local/dns_local.h"

namespace sb::proxy {

namespace {

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
    Daemon daemon(in_use, *factory);
    if (auto status = daemon.start(); !status) {
        daemon.stop();
        return report_failure(status.error());
    }
    apply_settings();
    wait_unless_signalled([] { return false; });
    daemon.lameduck();
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
