// The Plan as JSON: the document `switchboard plan` prints and
// GET /debug/services serves. Key names are part of the contract (tests and
// users read them): see docs/planner.md.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "rules/plan.h"

namespace sb::rules {

// Pretty-printed, with a trailing newline. Pure and thread-safe.
std::string plan_to_json(const Plan& plan);

// The inverse, for tests and tools. Error naming the JSON path of the first
// missing or malformed field. Endpoints' is_local is not in the document:
// it is restored as (nodeName == node).
Result<Plan> plan_from_json(std::string_view json);

}  // namespace sb::rules
