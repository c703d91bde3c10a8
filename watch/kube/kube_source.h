// KubeSource: feeds the Store from a Kubernetes API server (list + watch over
// HTTPS), as kube-proxy's informers do.
//
// Credentials come from a kubeconfig (--kubeconfig) or, when none is given,
// from the in-cluster service account. Services, EndpointSlices, this
// node's Node object and, when asked (watch_pods), the Pods scheduled to this
// node are LISTed (paginated) and then WATCHed from the list's
// resourceVersion; 410 Gone relists and applies the difference; other
// failures reconnect with jittered exponential backoff. The Store is marked
// synced only once the first full LIST of every resource is in.
//
// Thread safety: create() and the destructor on one thread; start(), stop(),
// ready() and append_metrics() may be called from any thread. All network
// I/O runs on one background event-loop thread owned by the KubeSource.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/metrics.h"
#include "base/result.h"
#include "watch/kube/tuning.h"
#include "watch/store.h"

namespace sb::watch::kube {

inline constexpr const char* kServiceAccountDirEnv = "SWITCHBOARD_SERVICEACCOUNT_DIR";

struct KubeSourceOptions {
    std::string kubeconfig;  // --kubeconfig; empty: in-cluster
    std::string master;      // --master; overrides the server
    std::string node_name;   // this node, for the Node and Pod watches
    // Watch the Pods of this node (spec.nodeName=node_name; the DNS search
    // path maps a query's source address to its Pod). Needs node_name, and
    // RBAC list/watch on pods; the Store's synced and ready() do not wait
    // for them (reflector.h, ResourceSpec::gates_sync).
    bool watch_pods = false;
    // Root of the in-cluster service account files (token, ca.crt); tests
    // point it elsewhere. Empty: $SWITCHBOARD_SERVICEACCOUNT_DIR, else
    // /var/run/secrets/kubernetes.io/serviceaccount.
    std::string service_account_dir;
    // Empty: KubeTuning defaults, or $SWITCHBOARD_KUBE_TUNING when set.
    std::optional<KubeTuning> tuning;
};

class KubeSource {
  public:
    // Resolves credentials (in-cluster or kubeconfig). Error (kInvalidArgument, message names
    // the file) when the kubeconfig is unreadable or invalid: the daemon exits 2.
    static Result<std::unique_ptr<KubeSource>> create(const KubeSourceOptions& options,
                                                      Store& store);
    ~KubeSource();
    KubeSource(const KubeSource&) = delete;
    KubeSource& operator=(const KubeSource&) = delete;

    // Background thread: LIST then WATCH each resource; Store::set_synced(true)
    // after all first LISTs. Only the first call has an effect.
    void start();
    void stop();         // idempotent; the source cannot be started again
    bool ready() const;  // initial lists done and connected
    void append_metrics(metrics::TextWriter& out) const;

  private:
    class Impl;
    explicit KubeSource(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::watch::kube
