#include "watch/store.h"

#include <algorithm>
#include <type_traits>

namespace sb::watch {

namespace {

// The Store keeps Nodes, Pods and ServiceCIDRs outside the Service index.
template <typename T>
constexpr bool kUnindexed =
    std::is_same_v<T, Node> || std::is_same_v<T, Pod> || std::is_same_v<T, ServiceCIDR>;

// Turns the Service keys a write touched into Changes of object `key`.
struct ChangeRecorder {
    std::vector<Change>& changes;
    Kind kind;
    ObjectKey key;
    void operator()(const ObjectKey& service) { changes.push_back({kind, key, service}); }
};

// An object as the Store keeps it, shared (taken from `object`).
template <typename T>
std::shared_ptr<const T> shared(T& object) {
    return std::make_shared<const T>(std::move(object));
}
template <typename T>
std::shared_ptr<const T> shared(std::shared_ptr<const T>& object) {
    return std::move(object);
}

}  // namespace

void Store::advance() {
    ++state_.generation_;
    cached_.reset();
}

template <typename Writes>
void Store::write(Writes writes) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        writes(changes);
        if (changes.empty()) return;
        advance();
    }
    notify(changes);
}

template <typename T>
void Store::put_locked(std::shared_ptr<const T> stored, std::vector<Change>& changes) {
    const Kind kind = kind_of<T>;
    ObjectKey key = stored->meta.key();
    if constexpr (kUnindexed<T>) {
        if (state_.put(std::move(stored))) changes.push_back({kind, std::move(key), {}});
    } else {
        state_.put(std::move(stored), ChangeRecorder{changes, kind, std::move(key)});
    }
}

void Store::erase_locked(Kind kind, const ObjectKey& key, std::vector<Change>& changes) {
    ChangeRecorder touched{changes, kind, key};
    switch (kind) {
        case Kind::kService:
            state_.erase_service(key, touched);
            break;
        case Kind::kEndpointSlice:
            state_.erase_slice(key, touched);
            break;
        case Kind::kNode:
            if (state_.erase_node(key)) changes.push_back({kind, key, {}});
            break;
        case Kind::kPod:
            if (state_.erase_pod(key)) changes.push_back({kind, key, {}});
            break;
        case Kind::kServiceCIDR:
            if (state_.erase_service_cidr(key)) changes.push_back({kind, key, {}});
            break;
    }
}

void Store::upsert(Service service) {
    write([&](std::vector<Change>& changes) { put_locked(shared(service), changes); });
}

void Store::upsert(EndpointSlice slice) {
    write([&](std::vector<Change>& changes) { put_locked(shared(slice), changes); });
}

void Store::upsert(Node node) {
    write([&](std::vector<Change>& changes) { put_locked(shared(node), changes); });
}

void Store::upsert(Pod pod) {
    write([&](std::vector<Change>& changes) { put_locked(shared(pod), changes); });
}

void Store::upsert(ServiceCIDR cidr) {
    write([&](std::vector<Change>& changes) { put_locked(shared(cidr), changes); });
}

void Store::remove(Kind kind, const ObjectKey& key) {
    write([&](std::vector<Change>& changes) { erase_locked(kind, key, changes); });
}

template <typename T, typename Wanted>
void Store::replace_kind(Wanted& wanted, std::vector<Change>& changes) {
    std::vector<ObjectKey> kept;
    kept.reserve(wanted.size());
    for (auto& object : wanted) {
        std::shared_ptr<const T> stored = shared(object);
        kept.push_back(stored->meta.key());
        put_locked(std::move(stored), changes);
    }
    std::sort(kept.begin(), kept.end());
    // The stored objects of this kind that `wanted` lacks.
    std::vector<ObjectKey> gone;
    auto collect = [&](const auto& objects) {
        for (const auto& [key, object] : objects) {
            if (!std::binary_search(kept.begin(), kept.end(), key)) gone.push_back(key);
        }
    };
    if constexpr (std::is_same_v<T, Service>) {
        for (const auto& [key, entry] : state_.services()) {
            if (entry->service && !std::binary_search(kept.begin(), kept.end(), key)) {
                gone.push_back(key);
            }
        }
    } else if constexpr (std::is_same_v<T, EndpointSlice>) {
        collect(state_.endpoint_slices());
    } else if constexpr (std::is_same_v<T, Node>) {
        collect(state_.nodes());
    } else if constexpr (std::is_same_v<T, Pod>) {
        collect(state_.pods());
    } else {
        collect(state_.service_cidrs());
    }
    for (const auto& key : gone) erase_locked(kind_of<T>, key, changes);
}

void Store::replace(Objects objects) {
    write([&](std::vector<Change>& changes) {
        replace_kind<Service>(objects.services, changes);
        replace_kind<EndpointSlice>(objects.endpoint_slices, changes);
        replace_kind<Node>(objects.nodes, changes);
        replace_kind<Pod>(objects.pods, changes);
        replace_kind<ServiceCIDR>(objects.service_cidrs, changes);
    });
}

template <typename Set>
void Store::replace_one_kind(Kind kind, Set& objects) {
    write([&](std::vector<Change>& changes) {
        switch (kind) {
            case Kind::kService:
                replace_kind<Service>(objects.services, changes);
                break;
            case Kind::kEndpointSlice:
                replace_kind<EndpointSlice>(objects.endpoint_slices, changes);
                break;
            case Kind::kNode:
                replace_kind<Node>(objects.nodes, changes);
                break;
            case Kind::kPod:
                replace_kind<Pod>(objects.pods, changes);
                break;
            case Kind::kServiceCIDR:
                replace_kind<ServiceCIDR>(objects.service_cidrs, changes);
                break;
        }
    });
}

void Store::replace(Kind kind, Objects objects) {
    replace_one_kind(kind, objects);
}

void Store::replace(Kind kind, SharedObjects objects) {
    replace_one_kind(kind, objects);
}

void Store::apply(const std::vector<Removal>& removals, Objects upserts) {
    write([&](std::vector<Change>& changes) {
        for (const auto& removal : removals) erase_locked(removal.kind, removal.key, changes);
        for (auto& service : upserts.services) put_locked(shared(service), changes);
        for (auto& slice : upserts.endpoint_slices) put_locked(shared(slice), changes);
        for (auto& node : upserts.nodes) put_locked(shared(node), changes);
        for (auto& pod : upserts.pods) put_locked(shared(pod), changes);
        for (auto& cidr : upserts.service_cidrs) put_locked(shared(cidr), changes);
    });
}

void Store::set_synced(bool synced) {
    {
        std::lock_guard lock(mutex_);
        if (state_.synced_ == synced) return;
        state_.synced_ = synced;
        advance();
    }
    // Consumers that waited for the initial state need a nudge even when the
    // objects themselves did not change.
    notify({});
}

std::shared_ptr<const Snapshot> Store::snapshot() const {
    std::lock_guard lock(mutex_);
    // Copies the maps' roots: the snapshot shares every node with the state.
    if (!cached_) cached_ = std::make_shared<const Snapshot>(state_);
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
