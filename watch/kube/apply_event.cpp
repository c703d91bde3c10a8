#include "watch/kube/apply_event.h"

#include <utility>
#include <variant>

namespace sb::watch::kube {

ObjectKey key_of(const AnyObject& object) {
    return std::visit([](const auto& value) { return value.meta.key(); }, object);
}

Applied apply_watch_event(Store& store, Kind kind, WatchEvent& event) {
    if (event.type == WatchEvent::Type::kDeleted) {
        store.remove(kind, key_of(event.object));
        return Applied::kRemoved;
    }
    if (!event.rejected.empty()) {
        store.remove(kind, key_of(event.object));
        return Applied::kRejected;
    }
    std::visit([&store](auto& object) { store.upsert(std::move(object)); }, event.object);
    return Applied::kUpserted;
}

}  // namespace sb::watch::kube
