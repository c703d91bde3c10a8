#include "watch/snapshot_builder.h"

#include <utility>

namespace sb::watch {

namespace {

void ignore(const ObjectKey&) {}

}  // namespace

SnapshotBuilder& SnapshotBuilder::add(Service service) {
    state_.put(std::make_shared<const Service>(std::move(service)), ignore);
    return *this;
}

SnapshotBuilder& SnapshotBuilder::add(EndpointSlice slice) {
    state_.put(std::make_shared<const EndpointSlice>(std::move(slice)), ignore);
    return *this;
}

SnapshotBuilder& SnapshotBuilder::add(Node node) {
    state_.put(std::make_shared<const Node>(std::move(node)));
    return *this;
}

SnapshotBuilder& SnapshotBuilder::add(Pod pod) {
    state_.put(std::make_shared<const Pod>(std::move(pod)));
    return *this;
}

SnapshotBuilder& SnapshotBuilder::remove_service(const ObjectKey& key) {
    state_.erase_service(key, ignore);
    return *this;
}

SnapshotBuilder& SnapshotBuilder::synced(bool synced) {
    state_.synced_ = synced;
    return *this;
}

SnapshotBuilder& SnapshotBuilder::generation(uint64_t generation) {
    state_.generation_ = generation;
    return *this;
}

std::shared_ptr<const Snapshot> SnapshotBuilder::build() const {
    return std::make_shared<const Snapshot>(state_);
}

}  // namespace sb::watch
