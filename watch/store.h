// Store: the cache of Kubernetes objects that every consumer reads.
//
// Sources (file, API server) write into it; the proxy and DNS read immutable
// snapshots (watch/snapshot.h: the objects and one entry per Service) and are
// told which objects changed. The Store keeps its state as a Snapshot whose
// maps share structure, so a write costs O(log n) and taking a snapshot
// after it O(1) (docs/store.md). Thread safety: every method
// may be called from any thread. Listeners run on the writer's thread, after
// the store's lock is released, and must be quick (record and return).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <type_traits>
#include <vector>

#include "watch/objects.h"
#include "watch/snapshot.h"

namespace sb::watch {

// In the order of watch::AnyObject's alternatives (watch/decoded.h).
enum class Kind : uint8_t { kService, kEndpointSlice, kNode, kPod, kServiceCIDR };
// How many values Kind has: the size of arrays indexed by Kind.
inline constexpr size_t kKindValues = static_cast<size_t>(Kind::kServiceCIDR) + 1;

// The Kind of a model type.
template <typename T>
constexpr Kind kind_of = std::is_same_v<T, Service>         ? Kind::kService
                         : std::is_same_v<T, EndpointSlice> ? Kind::kEndpointSlice
                         : std::is_same_v<T, Node>          ? Kind::kNode
                         : std::is_same_v<T, Pod>           ? Kind::kPod
                                                            : Kind::kServiceCIDR;

// One changed object. `service` is the Service the change affects: the
// object itself for a Service, the labelled Service for an EndpointSlice
// (both the old and the new one, as two changes, when the label moved),
// empty for a Node, a Pod and a ServiceCIDR (they feed no Service: the proxy
// ignores Pod changes; the DNS search path reads Pods; the proxy reads every
// ServiceCIDR's ranges at once).
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
    void upsert(Pod pod);
    void upsert(ServiceCIDR cidr);
    void remove(Kind kind, const ObjectKey& key);

    // Replaces every object of the given kinds with `objects` (a relist, or a
    // re-read of the file source), notifying the differences only.
    struct Objects {
        std::vector<Service> services;
        std::vector<EndpointSlice> endpoint_slices;
        std::vector<Node> nodes;
        std::vector<Pod> pods;
        std::vector<ServiceCIDR> service_cidrs;
    };
    void replace(Objects objects);
    // Replaces only the objects of `kind` with the matching vector of
    // `objects` (the other vectors are ignored) and leaves the other kinds
    // untouched: one resource's relist (KubeSource, after 410 Gone).
    void replace(Kind kind, Objects objects);
    // The same with objects already shared, as a paged LIST gathers them:
    // each page's objects are made shared as it is decoded, so the list never
    // holds every object's value in one vector besides the stored copies (at
    // 50k Services a vector of Services reached 31 MB, copied whole each time
    // it grew).
    struct SharedObjects {
        std::vector<std::shared_ptr<const Service>> services;
        std::vector<std::shared_ptr<const EndpointSlice>> endpoint_slices;
        std::vector<std::shared_ptr<const Node>> nodes;
        std::vector<std::shared_ptr<const Pod>> pods;
        std::vector<std::shared_ptr<const ServiceCIDR>> service_cidrs;
    };
    void replace(Kind kind, SharedObjects objects);

    // One object to remove: Store::apply's removals.
    struct Removal {
        Kind kind;
        ObjectKey key;
    };
    // Writes a batch as one change: every removal, then every upsert (so an
    // object in both ends up stored), each idempotent as above, and one
    // notification with every change, as replace gives. For a writer that
    // knows what changed (the file source's re-read of a few files): it costs
    // the batch, not the size of the Store.
    void apply(const std::vector<Removal>& removals, Objects upserts);

    void set_synced(bool synced);

    // The current state: O(1), and the same object until the next change.
    std::shared_ptr<const Snapshot> snapshot() const;

    // Listeners are called with each batch of changes.
    void subscribe(Listener listener);

  private:
    // The writes, under mutex_: each appends what it changed to `changes`.
    template <typename T>
    void put_locked(std::shared_ptr<const T> stored, std::vector<Change>& changes);
    void erase_locked(Kind kind, const ObjectKey& key, std::vector<Change>& changes);
    // `Wanted`: a vector of T or of std::shared_ptr<const T>.
    template <typename T, typename Wanted>
    void replace_kind(Wanted& wanted, std::vector<Change>& changes);
    template <typename Set>
    void replace_one_kind(Kind kind, Set& objects);
    // Runs `writes(changes)` under mutex_; when it changed something, advances
    // the generation and, after the lock, notifies the changes.
    template <typename Writes>
    void write(Writes writes);
    void advance();
    void notify(const std::vector<Change>& changes);

    mutable std::mutex mutex_;
    Snapshot state_;                                  // guarded by mutex_
    mutable std::shared_ptr<const Snapshot> cached_;  // guarded by mutex_; null after a write
    std::vector<Listener> listeners_;
};

}  // namespace sb::watch
