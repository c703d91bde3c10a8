// Result<T>: the one error type of switchboard (an expected-style value).
//
// A Result holds either a value or an Error carrying a code, a human message
// and, for failed system calls, the errno. Functions that can fail return a
// Result instead of throwing, so that no exception crosses an event loop.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace sb {

enum class ErrorCode {
    kInvalidArgument,  // the input is malformed or out of range
    kNotFound,
    kIo,           // a file or socket operation failed
    kKernel,       // netlink / setsockopt / ioctl refused a request
    kUnavailable,  // a peer (API server, upstream) is unreachable, retry later
    kUnauthorized,
    kInternal,
};

const char* to_string(ErrorCode code);

struct Error {
    ErrorCode code = ErrorCode::kInternal;
    std::string message;
    int errno_value = 0;

    // "message" or "message: strerror(errno)".
    std::string describe() const;
};

inline Error make_error(ErrorCode code, std::string message, int errno_value = 0) {
    return Error{code, std::move(message), errno_value};
}

template <typename T>
class [[nodiscard]] Result {
  public:
    Result(T value) : state_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
    Result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

    bool ok() const { return state_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & {
        assert(ok());
        return std::get<0>(state_);
    }
    const T& value() const& {
        assert(ok());
        return std::get<0>(state_);
    }
    T&& value() && {
        assert(ok());
        return std::get<0>(std::move(state_));
    }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const {
        assert(!ok());
        return std::get<1>(state_);
    }

  private:
    std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
  public:
    Result() = default;
    Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const {
        assert(!ok_);
        return error_;
    }

  private:
    Error error_;
    bool ok_ = true;
};

using Status = Result<void>;

}  // namespace sb
