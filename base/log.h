// The logging front end: a thin layer over spdlog so that the rest of the code
// names one place. Thread-safe (spdlog's default logger is).
#pragma once

#include <spdlog/spdlog.h>

namespace sb::log {

// Sets the level from "debug", "info", "warn", "error"; unknown names keep info.
void set_level(std::string_view level);

using spdlog::debug;
using spdlog::error;
using spdlog::info;
using spdlog::warn;

}  // namespace sb::log
