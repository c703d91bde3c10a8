#include "base/result.h"

#include <fmt/format.h>

#include <cstring>

namespace sb {

const char* to_string(ErrorCode code) {
    switch (code) {
        case ErrorCode::kInvalidArgument:
            return "invalid argument";
        case ErrorCode::kNotFound:
            return "not found";
        case ErrorCode::kIo:
            return "I/O error";
        case ErrorCode::kKernel:
            return "kernel error";
        case ErrorCode::kUnavailable:
            return "unavailable";
        case ErrorCode::kUnauthorized:
            return "unauthorized";
        case ErrorCode::kInternal:
            return "internal error";
    }
    return "unknown error";
}

std::string Error::describe() const {
    if (errno_value == 0) return message;
    return fmt::format("{}: {}", message, std::strerror(errno_value));
}

}  // namespace sb
