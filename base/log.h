// The logging front end: a thin layer over spdlog so that the rest of the code
// names one place. Thread-safe: every thread logs through spdlog's default
// logger, which the process sets once in main() and never swaps.
#pragma once

#include <spdlog/spdlog.h>

#include <string>
#include <utility>
#include <vector>

namespace sb::log {

// Sets the level from "debug", "info", "warn", "error"; unknown names keep info.
void set_level(std::string_view level);

// Holds back the lines the constructing thread logs while it lives, so a
// caller can drop them when the step that logged them fails (for example a
// command whose contract is one error line on failure). Lines of other
// threads are not affected, and no logger is swapped, so it is safe while
// other threads log. release() writes the held lines through the logger, in
// order; destroying it without release() drops them. Not nestable: a second
// one on the same thread while one is alive is a programming error.
class HeldLines {
  public:
    HeldLines();
    ~HeldLines();
    HeldLines(const HeldLines&) = delete;
    HeldLines& operator=(const HeldLines&) = delete;

    void release();

  private:
    std::vector<std::pair<spdlog::level::level_enum, std::string>> lines_;
    bool holding_ = true;
};

namespace detail {

// This thread's HeldLines buffer while one holds, else null.
std::vector<std::pair<spdlog::level::level_enum, std::string>>* held_lines();

template <typename... Args>
void log_at(spdlog::level::level_enum level, spdlog::format_string_t<Args...> format,
            Args&&... args) {
    if (auto* held = held_lines(); held != nullptr) {
        if (spdlog::should_log(level)) {
            held->emplace_back(level, fmt::format(format, std::forward<Args>(args)...));
        }
        return;
    }
    spdlog::log(level, format, std::forward<Args>(args)...);
}

}  // namespace detail

// One logging function per level: log::warn("{} skipped", name), or
// log::warn(message) for a message that is not a format string.
template <spdlog::level::level_enum Level>
struct LevelLog {
    template <typename... Args>
    void operator()(spdlog::format_string_t<Args...> format, Args&&... args) const {
        detail::log_at(Level, format, std::forward<Args>(args)...);
    }
    template <typename T>
    void operator()(const T& message) const {
        detail::log_at(Level, "{}", message);
    }
};

inline constexpr LevelLog<spdlog::level::debug> debug{};
inline constexpr LevelLog<spdlog::level::info> info{};
inline constexpr LevelLog<spdlog::level::warn> warn{};
inline constexpr LevelLog<spdlog::level::err> error{};

}  // namespace sb::log
