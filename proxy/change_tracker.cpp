#include "proxy/change_tracker.h"

#include <algorithm>
#include <compare>
#include <tuple>
#include <utility>

namespace sb::proxy {

bool ServiceInputs::operator==(const ServiceInputs& other) const {
    auto same = [](const auto& a, const auto& b) { return a == b || (a && b && *a == *b); };
    if (!same(service, other.service) || slices.size() != other.slices.size()) return false;
    for (size_t i = 0; i < slices.size(); ++i) {
        if (!same(slices[i], other.slices[i])) return false;
    }
    return true;
}

ServiceInputs inputs_of(const watch::Snapshot& snapshot, const watch::ObjectKey& key) {
    ServiceInputs inputs;
    auto it = snapshot.services.find(key);
    if (it != snapshot.services.end()) inputs.service = it->second;
    inputs.slices = snapshot.slices_for(key);
    std::sort(inputs.slices.begin(), inputs.slices.end(),
              [](const auto& a, const auto& b) { return a->meta.key() < b->meta.key(); });
    return inputs;
}

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
        std::map<watch::ObjectKey, ServiceInputs> baseline;
        for (const auto& [key, service] : snapshot.services) {
            baseline.emplace(key, inputs_of(snapshot, key));
        }
        for (const auto& key : dirty) {
            auto current = baseline.find(key);
            if (current == baseline.end()) continue;
            auto previous = baseline_.find(key);
            collect_trigger_times(previous == baseline_.end() ? ServiceInputs{} : previous->second,
                                  current->second);
        }
        baseline_.swap(baseline);
        return batch;
    }
    for (const auto& key : dirty) {
        ServiceInputs current = inputs_of(snapshot, key);
        auto it = baseline_.find(key);
        ServiceInputs previous = it == baseline_.end() ? ServiceInputs{} : it->second;
        if (previous == current) continue;
        collect_trigger_times(previous, current);
        if (current.service) {
            baseline_[key] = current;
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
    auto node_it = snapshot.nodes.find(watch::ObjectKey{"", options.node_name});
    const watch::Node* node = node_it == snapshot.nodes.end() ? nullptr : node_it->second.get();

    rules::Plan plan;
    plan.node = options.node_name;
    plan.services.reserve(previous.services.size() + sorted.size());
    auto emit = [&](const ServiceChange& change) {
        if (!change.current.service) return;  // deleted: its group is dropped
        auto ports = plan_service(*change.current.service, change.current.slices, node, options);
        for (auto& port : ports) plan.services.push_back(std::move(port));
    };
    auto compare = [](const rules::ServicePortPlan& port, const watch::ObjectKey& key) {
        return std::tie(port.ns, port.service) <=> std::tie(key.ns, key.name);
    };
    size_t next = 0;
    const ServiceChange* replaced = nullptr;  // the change whose group is being skipped
    for (size_t k = 0; k < previous.services.size(); ++k) {
        const rules::ServicePortPlan& port = previous.services[k];
        if (replaced && compare(port, replaced->key) == 0) continue;
        while (next < sorted.size() && compare(port, sorted[next]->key) > 0) emit(*sorted[next++]);
        if (next < sorted.size() && compare(port, sorted[next]->key) == 0) {
            replaced = sorted[next++];
            emit(*replaced);
            continue;
        }
        // Unchanged: the new plan shares the entry rather than copying it.
        plan.services.push_back(previous.services.entry(k));
    }
    while (next < sorted.size()) emit(*sorted[next++]);
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
