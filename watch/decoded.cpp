#include "watch/decoded.h"

namespace sb::watch {

std::string DecodeError::describe() const {
    std::string out;
    if (!kind.empty()) out = kind + " ";
    out += object;
    out += ": ";
    if (!path.empty()) out += path + ": ";
    out += message;
    return out;
}

}  // namespace sb::watch
