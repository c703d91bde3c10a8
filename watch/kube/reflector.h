// The reflector: keeps the Store equal to what the API server holds for a
// set of resources (Services, EndpointSlices, this Node, this node's Pods),
// as client-go's tools/cache reflector does. Per resource, a loop: LIST (paginated with
// `continue`) -> Store::replace(kind) -> WATCH from the list's
// resourceVersion -> apply the events; a watch the server ended resumes from
// the last resourceVersion (bookmarks move it too); 410 Gone relists (the
// replace diffs, so the Store sees only the differences); other failures back
// off (jittered, Retry-After honoured; the backoff starts over after a healthy
// watch or two minutes without failure) and resume. The Store is marked
// synced once every resource's first LIST is in. docs/kubernetes-source.md has
// the rules and the reasons.
//
// It talks to the server only through ApiTransport and waits only through
// Clock, so that tests drive it with scripted answers and no sockets or
// sleeping.
//
// Thread safety: run() loops and everything they touch run on one event loop
// (one thread). stop(), ready() and append_metrics() may be called from any
// thread. add_resource() only before the first run().
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/metrics.h"
#include "watch/kube/api_transport.h"
#include "watch/kube/backoff.h"
#include "watch/kube/tuning.h"
#include "watch/store.h"

namespace sb::watch::kube {

// Time as the reflector sees it: now() measures how long a watch lasted,
// sleep() waits out a backoff.
class Clock {
  public:
    virtual ~Clock() = default;
    virtual std::chrono::steady_clock::time_point now() = 0;
    virtual awaitable<void> sleep(Millis delay) = 0;
};

struct ResourceSpec {
    std::string name;  // metrics label and log name: services, endpointslices, nodes, pods
    Kind kind;
    std::string path;            // /api/v1/services
    std::string field_selector;  // "", metadata.name=NODE or spec.nodeName=NODE (not encoded)
    // Whether the Store's synced and ready() wait for this resource. Not for
    // the Pods: they only refine DNS answers (the search path), so a Pod
    // watch that cannot list, e.g. RBAC without pods, must not hold back the
    // proxy; until they are listed every client gets plain answers.
    bool gates_sync = true;
    // Whether the server may not serve the resource at all (ServiceCIDRs:
    // networking.k8s.io/v1 from Kubernetes 1.33). A 404 on its LIST means
    // "none of these here": the Store holds none of them, one line is logged
    // (info), and the LIST is retried quietly at the backoff cap, so an API
    // server upgraded later is noticed. Such a resource never gates sync.
    bool may_be_absent = false;
};

class Reflector {
  public:
    // A transport for one resource's loop, made when the loop (re)starts; the
    // loop owns it, so its connection dies with the loop.
    using TransportFactory = std::function<std::unique_ptr<ApiTransport>(const ResourceSpec&)>;

    // `server` names the API server in log lines. `seed` seeds the backoff
    // jitter and the randomised watch timeouts. `clock` must outlive the
    // reflector.
    Reflector(Store& store, std::string server, const KubeTuning& tuning, uint64_t seed,
              Clock& clock, TransportFactory make_transport);
    ~Reflector();
    Reflector(const Reflector&) = delete;
    Reflector& operator=(const Reflector&) = delete;

    void add_resource(ResourceSpec spec);
    size_t resource_count() const { return resources_.size(); }

    // The loop of resource `index` until stop(). No exception leaves it: an
    // unexpected one is logged and the loop restarts after a second.
    awaitable<void> run(size_t index);
    // The loops end at their next step.
    void stop() { stopping_ = true; }

    // Every first LIST done and every watch currently established.
    bool ready() const;
    void append_metrics(metrics::TextWriter& out) const;

  private:
    struct Resource;
    struct Outcome;

    awaitable<void> reflect(Resource& resource);
    awaitable<Outcome> list(Resource& resource, ApiTransport& transport);
    awaitable<Outcome> watch(Resource& resource, ApiTransport& transport);
    // The outcome of a request that got no answer.
    Outcome no_answer(Resource& resource, const Reply& reply, const char* request);
    Outcome status_outcome(Resource& resource, const Reply& reply);
    // Feeds the watch's lines to handle_line until it sets `end`; counts them.
    WatchLineHandlers line_handlers(Resource& resource, std::optional<Outcome>& end, size_t& lines);
    void handle_line(Resource& resource, std::string_view line, std::optional<Outcome>& end);
    void report_failure(Resource& resource, const std::string& reason);
    void mark_listed(Resource& resource);
    // A may_be_absent resource's LIST was a 404: see ResourceSpec.
    void note_absent(Resource& resource);

    using PairCounter = std::map<std::pair<std::string, std::string>, uint64_t>;
    using Counter = std::map<std::string, uint64_t>;
    void count(PairCounter& counter, const std::string& a, const std::string& b);
    void count(Counter& counter, const std::string& a, uint64_t n = 1);

    Store& store_;
    std::string server_;
    KubeTuning tuning_;
    uint64_t seed_;
    Clock& clock_;
    TransportFactory make_transport_;
    std::vector<std::unique_ptr<Resource>> resources_;
    std::atomic<bool> synced_{false};
    std::atomic<bool> stopping_{false};

    mutable std::mutex metrics_mutex_;
    PairCounter requests_;  // resource, code
    PairCounter events_;    // resource, type
    Counter decode_errors_;
    Counter oversized_lines_;
    Counter relists_;
    Counter reconnects_;
};

}  // namespace sb::watch::kube
