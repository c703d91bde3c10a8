#include "watch/store.h"

namespace sb::watch {

std::vector<std::shared_ptr<const EndpointSlice>> Snapshot::slices_for(
    const ObjectKey& service) const {
    std::vector<std::shared_ptr<const EndpointSlice>> result;
    // Slices live in their Service's namespace; the scan is bounded to it.
    for (auto it = endpoint_slices.lower_bound(ObjectKey{service.ns, ""});
         it != endpoint_slices.end() && it->first.ns == service.ns; ++it) {
        if (it->second->service_name == service.name) result.push_back(it->second);
    }
    return result;
}

namespace {

ObjectKey service_of(const EndpointSlice& slice) {
    if (slice.service_name.empty()) return {};
    return {slice.meta.ns, slice.service_name};
}

template <typename T>
void diff_into(Kind kind, std::map<ObjectKey, std::shared_ptr<const T>>& current,
               std::vector<T>& wanted, std::vector<Change>& changes,
               ObjectKey (*service_key)(const T&)) {
    std::map<ObjectKey, std::shared_ptr<const T>> next;
    for (auto& object : wanted) {
        ObjectKey key = object.meta.key();
        auto old = current.find(key);
        if (old != current.end() && *old->second == object) {
            next.emplace(key, old->second);
            continue;
        }
        if (old != current.end()) {
            ObjectKey old_service = service_key(*old->second);
            if (old_service != service_key(object)) changes.push_back({kind, key, old_service});
        }
        auto stored = std::make_shared<const T>(std::move(object));
        changes.push_back({kind, key, service_key(*stored)});
        next.emplace(std::move(key), std::move(stored));
    }
    for (const auto& [key, object] : current) {
        if (!next.count(key)) changes.push_back({kind, key, service_key(*object)});
    }
    current.swap(next);
}

ObjectKey service_key_of_service(const Service& service) {
    return service.meta.key();
}
ObjectKey no_service(const Node&) {
    return {};
}

}  // namespace

void Store::upsert(Service service) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        ObjectKey key = service.meta.key();
        auto it = services_.find(key);
        if (it != services_.end() && *it->second == service) return;
        services_[key] = std::make_shared<const Service>(std::move(service));
        changes.push_back({Kind::kService, key, key});
        ++generation_;
        cached_.reset();
    }
    notify(changes);
}

void Store::upsert(EndpointSlice slice) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        ObjectKey key = slice.meta.key();
        auto it = slices_.find(key);
        if (it != slices_.end()) {
            if (*it->second == slice) return;
            ObjectKey old_service = service_of(*it->second);
            if (old_service != service_of(slice)) {
                changes.push_back({Kind::kEndpointSlice, key, old_service});
            }
        }
        ObjectKey service = service_of(slice);
        slices_[key] = std::make_shared<const EndpointSlice>(std::move(slice));
        changes.push_back({Kind::kEndpointSlice, key, service});
        ++generation_;
        cached_.reset();
    }
    notify(changes);
}

void Store::upsert(Node node) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        ObjectKey key = node.meta.key();
        auto it = nodes_.find(key);
        if (it != nodes_.end() && *it->second == node) return;
        nodes_[key] = std::make_shared<const Node>(std::move(node));
        changes.push_back({Kind::kNode, key, {}});
        ++generation_;
        cached_.reset();
    }
    notify(changes);
}

void Store::remove(Kind kind, const ObjectKey& key) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        switch (kind) {
            case Kind::kService:
                if (services_.erase(key)) changes.push_back({kind, key, key});
                break;
            case Kind::kEndpointSlice: {
                auto it = slices_.find(key);
                if (it != slices_.end()) {
                    changes.push_back({kind, key, service_of(*it->second)});
                    slices_.erase(it);
                }
                break;
            }
            case Kind::kNode:
                if (nodes_.erase(key)) changes.push_back({kind, key, {}});
                break;
        }
        if (changes.empty()) return;
        ++generation_;
        cached_.reset();
    }
    notify(changes);
}

void Store::replace(Objects objects) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        diff_into(Kind::kService, services_, objects.services, changes, &service_key_of_service);
        diff_into(Kind::kEndpointSlice, slices_, objects.endpoint_slices, changes, &service_of);
        diff_into(Kind::kNode, nodes_, objects.nodes, changes, &no_service);
        if (changes.empty()) return;
        ++generation_;
        cached_.reset();
    }
    notify(changes);
}

void Store::replace(Kind kind, Objects objects) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        switch (kind) {
            case Kind::kService:
                diff_into(kind, services_, objects.services, changes, &service_key_of_service);
                break;
            case Kind::kEndpointSlice:
                diff_into(kind, slices_, objects.endpoint_slices, changes, &service_of);
                break;
            case Kind::kNode:
                diff_into(kind, nodes_, objects.nodes, changes, &no_service);
                break;
        }
        if (changes.empty()) return;
        ++generation_;
        cached_.reset();
    }
    notify(changes);
}

void Store::set_synced(bool synced) {
    {
        std::lock_guard lock(mutex_);
        if (synced_ == synced) return;
        synced_ = synced;
        ++generation_;
        cached_.reset();
    }
    // Consumers that waited for the initial state need a nudge even when the
    // objects themselves did not change.
    notify({});
}

std::shared_ptr<const Snapshot> Store::snapshot() const {
    std::lock_guard lock(mutex_);
    if (!cached_) {
        auto snapshot = std::make_shared<Snapshot>();
        snapshot->services = services_;
        snapshot->endpoint_slices = slices_;
        snapshot->nodes = nodes_;
        snapshot->generation = generation_;
        snapshot->synced = synced_;
        cached_ = std::move(snapshot);
    }
    return cached_;
}

void Store::subscribe(Listener listener) {
    std::lock_guard lock(mutex_);
    listeners_.push_back(std::move(listener));
}

void Store::notify(const std::vector<Change>& changes) {
    std::vector<Listener> listeners;
    {
        std::lock_guard lock(mutex_);
        listeners = listeners_;
    }
    for (const auto& listener : listeners) listener(changes);
}

}  // namespace sb::watch
