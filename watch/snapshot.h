// Snapshot: an immutable state of the Store, with its Service index.
//
// Besides the objects by key, a snapshot holds one entry per Service key:
// the Service (absent while only its EndpointSlices exist) and the slices
// labelled with its name, sorted by key. The index is maintained as objects
// are written, so readers (planner, DNS zone, change tracker) look a Service
// up with service(key) instead of grouping slices themselves.
//
// Only the Store and SnapshotBuilder (watch/snapshot_builder.h, for tests,
// benches and fuzz targets) make snapshots, through the same write
// functions, so a snapshot never exists without its index. Every map is a
// PersistentMap: copying a snapshot copies a few pointers and the copies
// share all unchanged structure (docs/store.md).
//
// Thread safety: a snapshot is immutable once handed out; read it from any
// thread. Objects are shared and never modified in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "watch/objects.h"
#include "watch/persistent_map.h"

namespace sb::watch {

struct ObjectKeyHash {
    size_t operator()(const ObjectKey& key) const {
        const size_t ns = std::hash<std::string>{}(key.ns);
        return ns ^
               (std::hash<std::string>{}(key.name) + 0x9e3779b97f4a7c15ull + (ns << 6) + (ns >> 2));
    }
};

// One Service key's inputs.
struct ServiceEntry {
    std::shared_ptr<const Service> service;  // null: the Service is absent
    // The EndpointSlices in the Service's namespace labelled with its name,
    // sorted by key.
    std::vector<std::shared_ptr<const EndpointSlice>> slices;
    // By value; a pointer shared by both sides is equal without a look.
    bool operator==(const ServiceEntry& other) const;
};

// The Service an EndpointSlice belongs to: its namespace and its
// kubernetes.io/service-name label; empty when the label is absent.
ObjectKey service_key_of(const EndpointSlice& slice);

class Snapshot {
  public:
    using ServiceIndex =
        PersistentMap<ObjectKey, std::shared_ptr<const ServiceEntry>, ObjectKeyHash>;
    template <typename T>
    using ByKey = PersistentMap<ObjectKey, std::shared_ptr<const T>, ObjectKeyHash>;

    // The entry of Service `key`; nullptr when neither the Service nor a
    // slice labelled with it exists.
    const ServiceEntry* service(const ObjectKey& key) const;
    // Every entry, in key order (namespace, then name).
    const ServiceIndex& services() const { return services_; }
    // The Service `key` itself; nullptr when absent.
    const Service* find_service(const ObjectKey& key) const;
    // How many Services exist (entries with a Service).
    size_t service_count() const { return service_count_; }
    // Every EndpointSlice by key, labelled or not.
    const ByKey<EndpointSlice>& endpoint_slices() const { return slices_; }
    const ByKey<Node>& nodes() const { return nodes_; }
    // The Node called `name`; nullptr when absent.
    const Node* node(const std::string& name) const;
    // Every Pod the sources deliver (the API source: this node's only).
    const ByKey<Pod>& pods() const { return pods_; }
    // Every ServiceCIDR (cluster-scoped: keyed by name).
    const ByKey<ServiceCIDR>& service_cidrs() const { return service_cidrs_; }

    // Increases with every change that reached the store.
    uint64_t generation() const { return generation_; }
    // True once every source has delivered a complete initial state (first
    // full LIST, or first read of the files): before that, answers built
    // from the snapshot would describe half a cluster.
    bool synced() const { return synced_; }

  private:
    friend class Store;
    friend class SnapshotBuilder;

    // Empty, unsynced, generation 0: the state a Store or builder starts from.
    Snapshot() = default;

    // The writes, index included. Each returns whether anything changed
    // (writing an object equal to the stored one changes nothing), and
    // reports the Service keys it touched through `touched` (the old and the
    // new one when a slice's label moved; none for a Node, a Pod or a ServiceCIDR).
    using Touched = std::function<void(const ObjectKey& service)>;
    bool put(std::shared_ptr<const Service> service, const Touched& touched);
    bool put(std::shared_ptr<const EndpointSlice> slice, const Touched& touched);
    bool put(std::shared_ptr<const Node> node);
    bool put(std::shared_ptr<const Pod> pod);
    bool put(std::shared_ptr<const ServiceCIDR> cidr);
    bool erase_service(const ObjectKey& key, const Touched& touched);
    bool erase_slice(const ObjectKey& key, const Touched& touched);
    bool erase_node(const ObjectKey& key);
    bool erase_pod(const ObjectKey& key);
    bool erase_service_cidr(const ObjectKey& key);

    // Rewrites the entry of `key` with `edit`; drops it when left empty.
    template <typename Edit>
    void edit_entry(const ObjectKey& key, Edit edit);

    ServiceIndex services_;
    size_t service_count_ = 0;
    ByKey<EndpointSlice> slices_;
    ByKey<Node> nodes_;
    ByKey<Pod> pods_;
    ByKey<ServiceCIDR> service_cidrs_;
    uint64_t generation_ = 0;
    bool synced_ = false;
};

// Whether any Service, EndpointSlice or Pod of `snapshot` is in namespace
// `ns`: the one-shot commands' test for a namespace that is not there (the
// Store holds no Namespace objects). Walks the snapshot.
bool namespace_in_use(const Snapshot& snapshot, const std::string& ns);

}  // namespace sb::watch
