// Affinity cleanup: the kernel fills the dynamic affinity maps (client ->
// endpoint, with a timeout) as packets pass; when an endpoint leaves a
// service port with ClientIP affinity, the entries that send a client to it
// are deleted, so that client picks a live endpoint at once instead of after
// the timeout. Best effort: a failure is logged and the entries expire on
// their own.
#pragma once

#include <vector>

#include "rules/nftables/channel.h"
#include "rules/port_changes.h"

namespace sb::rules::nftables {

// For every changed service port that had ClientIP affinity, the endpoints
// (address and port) that no longer serve it with affinity; then, per
// family, one dump of the affinity map and one batch deleting the entries
// pointing at one of them. An entry expiring between the dump and the
// delete fails that batch; the rest then expire on their own.
void clean_affinity(Channel& channel, const std::vector<PortChange>& changed);

}  // namespace sb::rules::nftables
