// SnapshotBuilder: a Snapshot made by hand, for tests, benches and fuzz
// targets. It writes through the same functions as the Store, so the
// Service index of what it builds is the one the Store would keep.
// Thread safety: none; use one builder from one thread.
#pragma once

#include <cstdint>
#include <memory>

#include "watch/objects.h"
#include "watch/snapshot.h"

namespace sb::watch {

class SnapshotBuilder {
  public:
    // Adds or replaces (by key).
    SnapshotBuilder& add(Service service);
    SnapshotBuilder& add(EndpointSlice slice);
    SnapshotBuilder& add(Node node);
    SnapshotBuilder& add(Pod pod);
    // Removes the Service `key` (its slices stay, as in the Store).
    SnapshotBuilder& remove_service(const ObjectKey& key);
    SnapshotBuilder& synced(bool synced = true);
    SnapshotBuilder& generation(uint64_t generation);

    // The state so far; the builder can go on adding.
    std::shared_ptr<const Snapshot> build() const;

  private:
    Snapshot state_;
};

}  // namespace sb::watch
