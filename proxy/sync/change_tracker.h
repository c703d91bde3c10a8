// ChangeTracker: which Services changed since the last sync.
//
// Like kube-proxy's servicechangetracker / endpointschangetracker: the Store
// listener only records the keys of the affected Services (cheap, on the
// writer's thread); at sync time take() compares each recorded Service's
// inputs (the Service and its EndpointSlices) as of the previous take() with
// the current snapshot and drops those that are equal again (an update
// followed by its revert, a relist that changed nothing). A change to this
// node's Node object (its zone feeds topology) marks everything changed; a
// ServiceCIDR change marks the plan's service CIDRs changed.
//
// For kube-proxy's metrics it also counts the changes waiting for a sync
// (pending()) and hands each batch the last-change-trigger-time annotations
// of the EndpointSlices that changed in it (kube-proxy's
// lastChangeTriggerTimes), so that network programming latency can be
// measured once the kernel has the batch.
//
// Thread safety: record() may be called from any thread; take() and
// apply_incremental() from the sync thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "proxy/sync/planner.h"
#include "rules/plan.h"
#include "watch/store.h"

namespace sb::proxy {

// What the planner reads for one Service: its entry in the Store's index.
// Pointers come from Store snapshots, which never mutate an object in place.
using ServiceInputs = watch::ServiceEntry;

struct ServiceChange {
    watch::ObjectKey key;
    ServiceInputs previous;
    ServiceInputs current;
};

// Changes recorded since the last take().
struct PendingChanges {
    uint64_t services = 0;         // distinct Services with a Service change
    uint64_t endpoint_slices = 0;  // EndpointSlice changes (each event counts)
};

class ChangeTracker {
  public:
    using time_point = std::chrono::system_clock::time_point;
    // Trigger times before `started` are not reported (kube-proxy's
    // trackerStartTime): a slice changed before this process ran was not
    // waiting for it.
    ChangeTracker(std::string node_name, time_point started);

    // The Store listener's body: records keys only. Returns true when the
    // batch concerned the proxy (a Service, a slice of one, this Node, a
    // ServiceCIDR; never a Pod).
    bool record(const std::vector<watch::Change>& changes);

    struct Batch {
        std::vector<ServiceChange> services;  // sorted by key, equal ones dropped
        bool node_changed = false;            // this Node changed: replan everything
        // A ServiceCIDR changed: the plan's service_cidrs are read again
        // (apply_incremental does, with or without changed Services).
        bool service_cidrs_changed = false;
        // The state the batch was judged against: plan from this one.
        std::shared_ptr<const watch::Snapshot> snapshot;
        // The last-change-trigger-time of each EndpointSlice of an existing
        // Service that is new or changed since the previous take() (deleted
        // slices have none), when it is valid and not before `started`.
        // Collected for full takes too.
        std::vector<time_point> trigger_times;
    };
    // Takes the keys recorded since the last take(), THEN the Store's
    // snapshot, and judges them against it; the snapshot becomes the
    // baseline of the Services concerned. The order matters: a change
    // recorded before the keys were taken is already in the Store (the Store
    // notifies after writing), so it is in the snapshot; one recorded after
    // is kept for the next take(). With `full` the whole snapshot becomes the
    // baseline (a full sync replans everything, so nothing missed can
    // linger) and the batch lists no Service.
    Batch take(const watch::Store& store, bool full);

    PendingChanges pending() const;

  private:
    const std::string node_name_;
    const time_point started_;
    mutable std::mutex mutex_;
    std::set<watch::ObjectKey> dirty_;             // guarded by mutex_
    bool node_dirty_ = false;                      // guarded by mutex_
    bool service_cidrs_dirty_ = false;             // guarded by mutex_
    std::set<watch::ObjectKey> pending_services_;  // guarded by mutex_
    uint64_t pending_slice_changes_ = 0;           // guarded by mutex_
    // Sync thread only: each Service's inputs as of the last take() that
    // judged it. A full take makes the snapshot's whole index the baseline
    // (O(1): the index shares structure); an entry without a Service counts
    // as absent.
    watch::Snapshot::ServiceIndex baseline_;
};

// The inputs of one Service in a snapshot: a copy of its index entry (empty
// when it has none).
ServiceInputs inputs_of(const watch::Snapshot& snapshot, const watch::ObjectKey& key);

// `previous` (a plan computed from an earlier snapshot) updated for the
// changed Services only, with plan_service(), and with the snapshot's
// service CIDRs: equal to
// build_plan(snapshot, options) when `changes` lists every Service whose
// inputs differ and this Node did not change.
rules::Plan apply_incremental(const rules::Plan& previous,
                              const std::vector<ServiceChange>& changes,
                              const watch::Snapshot& snapshot, const PlannerOptions& options);

}  // namespace sb::proxy
