#include "proxy/app/source_state.h"

#include <signal.h>

#include <fmt/format.h>

#include "base/log.h"

namespace sb::proxy {

namespace {

bool serves_dns(const Options& options) {
    return !options.dns.listen.empty() || !options.dns_local_addresses.empty();
}

}  // namespace

SourceSettings source_settings(const Options& options) {
    SourceSettings settings;
    settings.source_file = options.source_file;
    settings.kubeconfig = options.kubeconfig;
    settings.master = options.master;
    settings.node_name = options.node_name;
    // The search path needs this node's Pods (docs/dns.md, "Search path on
    // the server"); without it nothing reads them, and the RBAC grant for
    // Pods is not needed.
    settings.watch_pods = options.dns.autopath && serves_dns(options);
    return settings;
}

// On success the held lines (skipped objects...) are written out as usual.
// The lines are held per thread (log::HeldLines), not by swapping the
// default logger, which the listener threads already started may be using.
Status load_file_source(watch::FileSource& source) {
    log::HeldLines held;
    Status status = source.load();
    if (!status) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("--source: {}", status.error().describe()));
    }
    held.release();
    return status;
}

watch::kube::KubeSourceOptions kube_source_options(const SourceSettings& settings) {
    watch::kube::KubeSourceOptions kube;
    kube.kubeconfig = settings.kubeconfig;
    kube.master = settings.master;
    kube.node_name = settings.node_name;
    kube.watch_pods = settings.watch_pods;
    return kube;
}

bool wait_unless_signalled(const std::function<bool()>& done) {
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    const timespec tick{0, 100'000'000};
    while (!done()) {
        int signal = sigtimedwait(&signals, nullptr, &tick);
        if (signal == SIGINT || signal == SIGTERM) {
            log::info("received {}, stopping", signal == SIGINT ? "SIGINT" : "SIGTERM");
            return false;
        }
    }
    return true;
}

Result<LoadedState> load_state(const SourceSettings& settings) {
    LoadedState state;
    if (!settings.source_file.empty()) {
        watch::FileSource source(settings.source_file, *state.store);
        if (auto status = load_file_source(source); !status) return status.error();
        return state;
    }
    auto source = watch::kube::KubeSource::create(kube_source_options(settings), *state.store);
    if (!source) {
        return make_error(source.error().code,
                          fmt::format("--kubeconfig: {}", source.error().describe()));
    }
    state.kube_source = std::move(*source);
    state.kube_source->start();
    if (!wait_unless_signalled([&] { return state.store->snapshot()->synced(); })) {
        return make_error(ErrorCode::kUnavailable,
                          "interrupted before the API server's initial lists were in");
    }
    return state;
}

}  // namespace sb::proxy
