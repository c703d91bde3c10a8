// Which service ports differ between two plans; shared by both kernel
// backends (incremental sync, UDP conntrack cleanup). Pure.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "rules/plan.h"

namespace sb::rules {

// The service ports that differ between two plans, as (old, new) pairs with
// nullptr for an absent side: one merge walk over the order Plan promises
// (namespace, service, port name, protocol), so an unchanged port costs one
// comparison. nullopt when either plan breaks that order.
using PortChange = std::pair<const ServicePortPlan*, const ServicePortPlan*>;
std::optional<std::vector<PortChange>> changed_ports(const Plan& previous, const Plan& plan);

}  // namespace sb::rules
