// Affinity cleanup: the kernel fills the dynamic affinity maps (client .
// frontend -> endpoint, with a timeout) as packets pass, and a client whose
// entry exists is sent to that endpoint, whatever the rules say now. So
// after a sync every entry must name an endpoint the rules of its frontend
// would record themselves; the others (an endpoint that went not ready or was
// removed, a service port that lost affinity, a deleted Service whose
// ClusterIP a new one took) are deleted, and their clients choose again at
// once instead of after the timeout. The check is against the whole applied
// model, so a full sync (first after a start, periodic resync) leaves the same
// entries an incremental one would. Best effort: a failure is logged, and
// the next full sync or affinity change checks again.
#pragma once

#include <vector>

#include "rules/nftables/channel.h"
#include "rules/nftables/model.h"
#include "rules/port_changes.h"

namespace sb::rules::nftables {

// The keys of `entries` (elements of affinity_map(family): client . daddr .
// l4proto . dport : endpoint address . port) whose endpoint the rules of
// `model` would not choose for that frontend. The frontend is looked up as
// the kernel's services chain does: services4/6 by (daddr, l4proto, dport),
// else nodeports4/6 by (l4proto, dport), a NodePort entry's daddr being
// whichever node address the client used; the endpoints it may name are
// those of the affinity updates in the chain the frontend dispatches to and
// in the chains that one jumps or goes to. A frontend without such a chain
// (no service port, or one without affinity) keeps none. Pure; map lookups
// per entry and each chain walked once, never a walk of the plan.
std::vector<ElementKey> stale_affinity_entries(const Model& model, IpFamily family,
                                               const ElementMap& entries);

// Whether `changed` can make an entry stale: a service port had or has
// ClientIP affinity. Entries are made by the rules of affinity service ports
// only, so a sync changing none of them leaves every entry as valid as it was.
bool affinity_changed(const std::vector<PortChange>& changed);

// Per family: one dump of the affinity map, then one batch deleting its
// entries that stale_affinity_entries(applied, ...) names, if any.
// `applied`: the model the kernel holds. An entry expiring between the dump
// and the delete fails that family's batch; the rest is left to the next
// check or the timeout.
void clean_affinity(Channel& channel, const Model& applied);

}  // namespace sb::rules::nftables
