// Store: the cache of Kubernetes objects that every consumer reads.
//
// Sources (file, API server) write into it; the proxy and DNS read immutable
// snapshots and are told which objects changed. Thread safety: every method
// may be called from any thread. Listeners run on the writer's thread, after
// the store's lock is released, and must be quick (record and return).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "watch/objects.h"

namespace sb::watch {

enum class Kind : uint8_t { kService, kEndpointSlice, kNode };

struct Snapshot {
    std::map<ObjectKey, std::shared_ptr<const Service>> services;
    std::map<ObjectKey, std::shared_ptr<const EndpointSlice>> endpoint_slices;
    std::map<ObjectKey, std::shared_ptr<const Node>> nodes;
    // Increases with every change that reached the store.
    uint64_t generation = 0;
    // True once every source has delivered a complete initial state
    // (first full LIST, or first read of the files): before that, answers
    // built from the snapshot would describe half a cluster.
    bool synced = false;

    // Slices whose kubernetes.io/service-name label names `service`.
    std::vector<std::shared_ptr<const EndpointSlice>> slices_for(const ObjectKey& service) const;
};

// One changed object. `service` is the Service the change affects: the
// object itself for a Service, the labelled Service for an EndpointSlice
// (both the old and the new one, as two changes, when the label moved),
// empty for a Node.
struct Change {
    Kind kind;
    ObjectKey key;
    ObjectKey service;
};

class Store {
  public:
    using Listener = std::function<void(const std::vector<Change>&)>;

    // Idempotent: writing an object equal to the stored one changes nothing
    // and notifies nobody.
    void upsert(Service service);
    void upsert(EndpointSlice slice);
    void upsert(Node node);
    void remove(Kind kind, const ObjectKey& key);

    // Replaces every object of the given kinds with `objects` (a relist, or a
    // re-read of the file source), notifying the differences only.
    struct Objects {
        std::vector<Service> services;
        std::vector<EndpointSlice> endpoint_slices;
        std::vector<Node> nodes;
    };
    void replace(Objects objects);
    // Replaces only the objects of `kind` with the matching vector of
    // `objects` (the other vectors are ignored) and leaves the other kinds
    // untouched: one resource's relist (KubeSource, after 410 Gone).
    void replace(Kind kind, Objects objects);

    void set_synced(bool synced);

    // The current state; cheap when nothing changed since the last call.
    std::shared_ptr<const Snapshot> snapshot() const;

    // Listeners are called with each batch of changes.
    void subscribe(Listener listener);

  private:
    void notify(const std::vector<Change>& changes);

    mutable std::mutex mutex_;
    std::map<ObjectKey, std::shared_ptr<const Service>> services_;
    std::map<ObjectKey, std::shared_ptr<const EndpointSlice>> slices_;
    std::map<ObjectKey, std::shared_ptr<const Node>> nodes_;
    uint64_t generation_ = 0;
    bool synced_ = false;
    mutable std::shared_ptr<const Snapshot> cached_;
    std::vector<Listener> listeners_;
};

}  // namespace sb::watch
