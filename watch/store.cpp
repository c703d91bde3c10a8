#include "watch/store.h"

#include <algorithm>
#include <type_traits>

namespace sb::watch {

namespace {

// The Store keeps Nodes and Pods outside the Service index.
template <typename T>
constexpr bool kUnindexed = std::is_same_v<T, Node> || std::is_same_v<T, Pod>;

// Turns the Service keys a write touched into Changes of object `key`.
struct ChangeRecorder {
    std::vector<Change>& changes;
    Kind kind;
    ObjectKey key;
    void operator()(const ObjectKey& service) { changes.push_back({kind, key, service}); }
};

}  // namespace

void Store::advance() {
    ++state_.generation_;
    cached_.reset();
}

void Store::upsert(Service service) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        ObjectKey key = service.meta.key();
        ChangeRecorder touched{changes, Kind::kService, key};
        if (!state_.put(std::make_shared<const Service>(std::move(service)), touched)) return;
        advance();
    }
    notify(changes);
}

void Store::upsert(EndpointSlice slice) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        ObjectKey key = slice.meta.key();
        ChangeRecorder touched{changes, Kind::kEndpointSlice, key};
        if (!state_.put(std::make_shared<const EndpointSlice>(std::move(slice)), touched)) return;
        advance();
    }
    notify(changes);
}

template <typename T>
void Store::upsert_unindexed(Kind kind, T object) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        ObjectKey key = object.meta.key();
        if (!state_.put(std::make_shared<const T>(std::move(object)))) return;
        changes.push_back({kind, std::move(key), {}});
        advance();
    }
    notify(changes);
}

void Store::upsert(Node node) {
    upsert_unindexed(Kind::kNode, std::move(node));
}

void Store::upsert(Pod pod) {
    upsert_unindexed(Kind::kPod, std::move(pod));
}

void Store::remove(Kind kind, const ObjectKey& key) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
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
        }
        if (changes.empty()) return;
        advance();
    }
    notify(changes);
}

template <typename T>
void Store::replace_kind(Kind kind, std::vector<T>& wanted, std::vector<Change>& changes) {
    std::vector<ObjectKey> kept;
    kept.reserve(wanted.size());
    for (auto& object : wanted) {
        ObjectKey key = object.meta.key();
        kept.push_back(key);
        ChangeRecorder touched{changes, kind, key};
        auto stored = std::make_shared<const T>(std::move(object));
        if constexpr (kUnindexed<T>) {
            if (state_.put(std::move(stored))) changes.push_back({kind, key, {}});
        } else {
            state_.put(std::move(stored), touched);
        }
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
    } else {
        collect(state_.pods());
    }
    for (const auto& key : gone) {
        ChangeRecorder touched{changes, kind, key};
        if constexpr (std::is_same_v<T, Service>) {
            state_.erase_service(key, touched);
        } else if constexpr (std::is_same_v<T, EndpointSlice>) {
            state_.erase_slice(key, touched);
        } else if constexpr (std::is_same_v<T, Node>) {
            if (state_.erase_node(key)) changes.push_back({kind, key, {}});
        } else {
            if (state_.erase_pod(key)) changes.push_back({kind, key, {}});
        }
    }
}

void Store::replace(Objects objects) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        replace_kind(Kind::kService, objects.services, changes);
        replace_kind(Kind::kEndpointSlice, objects.endpoint_slices, changes);
        replace_kind(Kind::kNode, objects.nodes, changes);
        replace_kind(Kind::kPod, objects.pods, changes);
        if (changes.empty()) return;
        advance();
    }
    notify(changes);
}

void Store::replace(Kind kind, Objects objects) {
    std::vector<Change> changes;
    {
        std::lock_guard lock(mutex_);
        switch (kind) {
            case Kind::kService:
                replace_kind(kind, objects.services, changes);
                break;
            case Kind::kEndpointSlice:
                replace_kind(kind, objects.endpoint_slices, changes);
                break;
            case Kind::kNode:
                replace_kind(kind, objects.nodes, changes);
                break;
            case Kind::kPod:
                replace_kind(kind, objects.pods, changes);
                break;
        }
        if (changes.empty()) return;
        advance();
    }
    notify(changes);
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
