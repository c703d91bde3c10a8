#include "watch/decoded.h"

#include <fmt/format.h>

namespace sb::watch {

std::string DecodeError::describe() const {
    const std::string named = kind.empty() ? object : fmt::format("{} {}", kind, object);
    if (path.empty()) return fmt::format("{}: {}", named, message);
    return fmt::format("{}: {}: {}", named, path, message);
}

}  // namespace sb::watch
