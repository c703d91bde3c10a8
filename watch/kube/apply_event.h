// How a watch event changes the Store: the reflector's one rule, kept apart
// from the connection code so that it is testable without a server.
//
// A relist (Store::replace) skips every object that fails validation, so
// the object is gone from the store. An ADDED or MODIFIED event whose object
// fails validation must leave the same state: the object is removed (treated
// as deleted until a valid version arrives), not kept at its last valid
// version. Otherwise a node that watched the change and a node that listed
// after it would program different rules for the same cluster.
//
// Thread safety: as the Store's (any thread).
#pragma once

#include "watch/decode.h"
#include "watch/store.h"

namespace sb::watch::kube {

enum class Applied {
    kUpserted,  // a valid ADDED or MODIFIED object was stored
    kRemoved,   // a DELETED event removed the object
    kRejected,  // an invalid ADDED or MODIFIED object was removed
};

// The key of whatever object `object` holds.
ObjectKey key_of(const AnyObject& object);

// Applies an ADDED, MODIFIED or DELETED `event` whose object is of `kind`
// (the caller checks both) and says what it did. Moves the object out.
Applied apply_watch_event(Store& store, Kind kind, WatchEvent& event);

}  // namespace sb::watch::kube
