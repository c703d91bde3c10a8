#include "proxy/app/one_shot.h"

#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "base/log.h"
#include "proxy/app/backend_choice.h"
#include "proxy/app/exit_codes.h"
#include "proxy/app/node_state.h"
#include "proxy/app/source_state.h"
#include "proxy/sync/planner.h"
#include "rules/dns_local/dns_local.h"
#include "rules/iptables/iptc.h"
#include "rules/kube_proxy_cleanup/kube_proxy_cleanup.h"
#include "rules/plan_json.h"

namespace sb::proxy {

int run_plan(const Options& options) {
    auto state = load_state(source_settings(options));
    if (!state) return report_failure(state.error());
    auto plan = build_plan(*state->store->snapshot(),
                           PlannerOptions{options.node_name, options.dns_local_addresses});
    std::cout << rules::plan_to_json(plan) << std::flush;
    return kExitOk;
}

int run_dry_run(const Options& options) {
    auto factory = backend_factory(options.proxy_mode);
    if (!factory) return report_failure(factory.error());
    auto state = load_state(source_settings(options));
    if (!state) return report_failure(state.error());
    auto snapshot = state->store->snapshot();
    auto plan =
        build_plan(*snapshot, PlannerOptions{options.node_name, options.dns_local_addresses});
    const rules::BackendOptions backend_options = resolved_backend_options(options, *snapshot);
    log_resolution(options, backend_options);
    auto backend = (*factory)(backend_options);
    auto text = backend->render_text(plan);
    if (!text) return report_failure(make_error(ErrorCode::kInternal, text.error().describe()));
    std::cout << *text << std::flush;
    return kExitOk;
}

int run_cleanup(const Options& options) {
    // kube-proxy --cleanup removes the rules of every mode, whatever
    // --proxy-mode says; modes not built yet own nothing to remove.
    int code = kExitOk;
    for (ProxyMode mode : {ProxyMode::kNftables, ProxyMode::kIptables, ProxyMode::kIpvs}) {
        auto factory = backend_factory(mode);
        if (!factory) continue;
        auto backend = (*factory)(options.backend);
        if (auto status = backend->cleanup(); !status) {
            print_error(
                fmt::format("--cleanup: {}: {}", to_string(mode), status.error().describe()));
            code = kExitFailure;
        }
    }
    // Whatever --dns-local-address says now: an earlier run may have made them.
    if (auto status = rules::dns_local::cleanup(); !status) {
        print_error(fmt::format("--cleanup: --dns-local-address: {}", status.error().describe()));
        code = kExitFailure;
    }
    // The node state describes kernel state that is gone now (docs/daemon.md, "Node state").
    if (!options.state_dir.empty()) {
        if (auto status = remove_node_state_folder(options.state_dir); !status) {
            print_error(fmt::format("--cleanup: --state-dir: {}", status.error().describe()));
            code = kExitFailure;
        }
    }
    return code;
}

int run_cleanup_kube_proxy() {
    const std::unique_ptr<rules::iptables::Xtables> legacy =
        rules::iptables::make_libiptc_xtables();
    auto removed = rules::kube_proxy_cleanup::remove_kube_proxy_leftovers(*legacy);
    if (!removed) {
        return report_failure(
            make_error(removed.error().code,
                       fmt::format("--cleanup-kube-proxy: {}", removed.error().message)));
    }
    log::info("--cleanup-kube-proxy: {}", rules::kube_proxy_cleanup::describe(*removed));
    return kExitOk;
}

}  // namespace sb::proxy
