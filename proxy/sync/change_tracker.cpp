#include "proxy/sync/change_tracker.h"

#include <algorithm>
#include <compare>
#include <tuple>
#include <utility>

namespace sb::proxy {

ServiceInputs inputs_of(const watch::Snapshot& snapshot, const watch::ObjectKey& key) {
    const watch::ServiceEntry* entry = snapshot.service(key);
    return entry ? *entry : ServiceInputs{};
}

namespace {

// A baseline entry as the Service it describes: absent without a Service.
ServiceInputs baseline_of(const watch::Snapshot::ServiceIndex& baseline,
                          const watch::ObjectKey& key) {
    const auto* entry = baseline.find(key);
    return entry && (*entry)->service ? **entry : ServiceInputs{};
}

}  // namespace

ChangeTracker::ChangeTracker(std::string node_name, time_point started)
    : node_name_(std::move(node_name)), started_(started) {}

PendingChanges ChangeTracker::pending() const {
    std::lock_guard lock(mutex_);
    return PendingChanges{pending_services_.size(), pending_slice_changes_};
}

bool ChangeTracker::record(const std::vector<watch::Change>& changes) {
    bool relevant = false;
    std::lock_guard lock(mutex_);
    for (const auto& change : changes) {
        // Pods feed the DNS search path only: no rule depends on them.
        if (change.kind == watch::Kind::kPod) continue;
        if (change.kind == watch::Kind::kServiceCIDR) {
            service_cidrs_dirty_ = true;
            relevant = true;
            continue;
        }
        if (change.kind == watch::Kind::kNode) {
            if (change.key.name == node_name_) {
                node_dirty_ = true;
                relevant = true;
            }
            continue;
        }
        // A slice without a service-name label feeds no Service.
        if (change.service.name.empty()) continue;
        dirty_.insert(change.service);
        relevant = true;
        if (change.kind == watch::Kind::kService) pending_services_.insert(change.key);
        if (change.kind == watch::Kind::kEndpointSlice) ++pending_slice_changes_;
    }
    return relevant;
}

ChangeTracker::Batch ChangeTracker::take(const watch::Store& store, bool full) {
    std::set<watch::ObjectKey> dirty;
    Batch batch;
    {
        std::lock_guard lock(mutex_);
        dirty.swap(dirty_);
        batch.node_changed = std::exchange(node_dirty_, false);
        batch.service_cidrs_changed = std::exchange(service_cidrs_dirty_, false);
        pending_services_.clear();
        pending_slice_changes_ = 0;
    }
    batch.snapshot = store.snapshot();
    const watch::Snapshot& snapshot = *batch.snapshot;
    // The trigger times of the slices in `current` that `previous` did not
    // have as they are now.
    auto collect_trigger_times = [&](const ServiceInputs& previous, const ServiceInputs& current) {
        if (!current.service) return;
        for (const auto& slice : current.slices) {
            const bool unchanged =
                std::any_of(previous.slices.begin(), previous.slices.end(),
                            [&](const auto& old) { return old == slice || *old == *slice; });
            if (unchanged) continue;
            auto time = watch::last_change_trigger_time(*slice);
            if (time && *time >= started_) batch.trigger_times.push_back(*time);
        }
    };
    if (full) {
        for (const auto& key : dirty) {
            ServiceInputs current = inputs_of(snapshot, key);
            if (!current.service) continue;
            collect_trigger_times(baseline_of(baseline_, key), current);
        }
        baseline_ = snapshot.services();
        return batch;
    }
    for (const auto& key : dirty) {
        ServiceInputs current = inputs_of(snapshot, key);
        ServiceInputs previous = baseline_of(baseline_, key);
        if (previous == current) continue;
        collect_trigger_times(previous, current);
        if (current.service) {
            baseline_.set(key, *snapshot.services().find(key));
        } else {
            // Slices of an absent Service plan nothing: forget them.
            baseline_.erase(key);
        }
        batch.services.push_back({key, std::move(previous), std::move(current)});
    }
    return batch;
}

rules::Plan apply_incremental(const rules::Plan& previous,
                              const std::vector<ServiceChange>& changes,
                              const watch::Snapshot& snapshot, const PlannerOptions& options) {
    // A Plan is sorted by namespace and service first, so it is a sequence of
    // per-Service groups in key order (build_plan concatenates plan_service()
    // over the snapshot's sorted Services). Merging the changed Services'
    // new groups into it in key order keeps it sorted exactly that way.
    std::vector<const ServiceChange*> sorted;
    for (const auto& change : changes) sorted.push_back(&change);
    std::sort(sorted.begin(), sorted.end(),
              [](const auto* a, const auto* b) { return a->key < b->key; });
    const watch::Node* node = snapshot.node(options.node_name);

    rules::Plan plan;
    plan.node = options.node_name;
    plan.service_cidrs = service_cidrs_of(snapshot);
    plan.services.reserve(previous.services.size() + sorted.size());
    auto emit = [&](const ServiceChange& change) {
        if (!change.current.service) return;  // deleted: its group is dropped
        auto ports = plan_service(*change.current.service, change.current.slices, node, options);
        for (auto& port : ports) plan.services.push_back(std::move(port));
    };
    // Each changed Service's group is found by binary search, and the
    // unchanged runs between them are shared, not copied: one change costs
    // O(log n) comparisons and a pointer copy per unchanged chunk
    // (base/containers/shared_sequence.h).
    auto before = [](const rules::ServicePortPlan& port, const watch::ObjectKey& key) {
        return std::tie(port.ns, port.service) < std::tie(key.ns, key.name);
    };
    auto not_after = [](const rules::ServicePortPlan& port, const watch::ObjectKey& key) {
        return !(std::tie(key.ns, key.name) < std::tie(port.ns, port.service));
    };
    auto kept = previous.services.begin();  // the first entry not yet emitted
    for (const ServiceChange* change : sorted) {
        auto group = std::partition_point(
            kept, previous.services.end(),
            [&](const rules::ServicePortPlan& port) { return before(port, change->key); });
        plan.services.append_shared(kept, group);
        emit(*change);
        kept = std::partition_point(
            group, previous.services.end(),
            [&](const rules::ServicePortPlan& port) { return not_after(port, change->key); });
    }
    plan.services.append_shared(kept, previous.services.end());
    plan.revision = rules::next_plan_revision();
    rules::PlanChanges changed{previous.revision, {}};
    changed.services.reserve(sorted.size());
    for (const auto* change : sorted)
        changed.services.emplace_back(change->key.ns, change->key.name);
    changed.services.erase(std::unique(changed.services.begin(), changed.services.end()),
                           changed.services.end());
    plan.changes = std::move(changed);
    return plan;
}

}  // namespace sb::proxy
