// The source's first complete state in a Store, for the one-shot commands
// (`plan`, --dry-run, `pod-env`, `lookup`): a file source read once, or the
// API server's initial lists. Blocks the calling thread; SIGINT or SIGTERM
// (blocked in every thread by main) interrupts the wait.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "proxy/options/options.h"
#include "watch/file_source.h"
#include "watch/kube/kube_source.h"
#include "watch/store.h"

namespace sb::proxy {

// Where the objects come from: --source, --kubeconfig, --master, and the
// node whose Pods a KubeSource lists when `watch_pods` is set.
struct SourceSettings {
    std::string source_file;  // "": the API server
    std::string kubeconfig;
    std::string master;
    std::string node_name;
    bool watch_pods = false;
};

// Where `options` read their objects from. Pods are watched only when the
// DNS server's search path needs them (autopath with DNS on).
SourceSettings source_settings(const Options& options);

// A Store holding the source's first complete state. Keeps the source alive
// (a KubeSource keeps watching) until the caller is done.
struct LoadedState {
    std::unique_ptr<watch::Store> store = std::make_unique<watch::Store>();
    std::unique_ptr<watch::kube::KubeSource> kube_source;
};

// Errors: kInvalidArgument naming --source or --kubeconfig for a bad file or
// kubeconfig (exit 2); kUnavailable when interrupted.
Result<LoadedState> load_state(const SourceSettings& settings);

// FileSource::load(), its log lines held back so that a failure prints only
// the caller's one line; kInvalidArgument naming --source.
Status load_file_source(watch::FileSource& source);

// KubeSource options for `settings`.
watch::kube::KubeSourceOptions kube_source_options(const SourceSettings& settings);

// Waits until done() holds (polled every 100 ms) or SIGINT/SIGTERM arrives;
// false when a signal ended the wait. The signals must be blocked.
bool wait_unless_signalled(const std::function<bool()>& done);

}  // namespace sb::proxy
