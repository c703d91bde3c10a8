#include "base/log.h"

#include <cassert>

namespace sb::log {
namespace {

thread_local std::vector<std::pair<spdlog::level::level_enum, std::string>>* held_on_thread =
    nullptr;

}  // namespace

void set_level(std::string_view level) {
    if (level == "debug") {
        spdlog::set_level(spdlog::level::debug);
    } else if (level == "warn") {
        spdlog::set_level(spdlog::level::warn);
    } else if (level == "error") {
        spdlog::set_level(spdlog::level::err);
    } else {
        spdlog::set_level(spdlog::level::info);
    }
}

HeldLines::HeldLines() {
    assert(held_on_thread == nullptr);
    held_on_thread = &lines_;
}

HeldLines::~HeldLines() {
    if (holding_) held_on_thread = nullptr;
}

void HeldLines::release() {
    if (!holding_) return;
    holding_ = false;
    held_on_thread = nullptr;
    for (const auto& [level, line] : lines_) spdlog::log(level, "{}", line);
    lines_.clear();
}

namespace detail {

std::vector<std::pair<spdlog::level::level_enum, std::string>>* held_lines() {
    return held_on_thread;
}

}  // namespace detail
}  // namespace sb::log
