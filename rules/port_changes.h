// Which service ports differ between two plans; shared by both kernel
// backends (incremental sync, UDP conntrack cleanup). Pure.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "rules/plan.h"

namespace sb::rules {

// The service ports that differ between two plans, as (old, new) pairs with
// nullptr for an absent side, in the order Plan promises (namespace, service,
// port name, protocol). When `plan` carries a change set derived from
// `previous` (plan.changes->base_revision == previous.revision), only the
// Services it names are looked at, so one changed Service costs a binary
// search and its own ports; otherwise one merge walk over both plans, where
// an entry the plans share costs a pointer comparison. nullopt when a plan
// breaks that order.
using PortChange = std::pair<const ServicePortPlan*, const ServicePortPlan*>;
std::optional<std::vector<PortChange>> changed_ports(const Plan& previous, const Plan& plan);

}  // namespace sb::rules
