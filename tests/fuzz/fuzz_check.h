// Checks shared by the fuzz targets. A failed check prints what failed and
// where (the targets are built at -O1, where inlining hides the line from
// the stack trace) and aborts, which libFuzzer reports as a crash with the
// input that caused it.
#pragma once

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace sb::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* what,
                              std::string_view detail) {
    std::fprintf(stderr, "%s:%d: check failed: %s %.*s\n", file, line, what,
                 static_cast<int>(detail.size()), detail.data());
    std::abort();
}

// A message is one line: no newline, nor any other control character a
// terminal acts on (docs/foundations.md: errors are one line).
inline bool is_one_line(std::string_view message) {
    for (char c : message) {
        if (std::iscntrl(static_cast<unsigned char>(c))) return false;
    }
    return true;
}

}  // namespace sb::fuzz

// FUZZ_REQUIRE(condition): an invariant of the code under test.
#define FUZZ_REQUIRE(condition) \
    ((condition) ? void() : ::sb::fuzz::fail(__FILE__, __LINE__, #condition, ""))

// FUZZ_REQUIRE_ONE_LINE(message): an error or warning is one line; prints the
// message (control characters escaped by the shell's reader) when it is not.
#define FUZZ_REQUIRE_ONE_LINE(message)                                                \
    do {                                                                              \
        const std::string fuzz_message_(message);                                     \
        if (!::sb::fuzz::is_one_line(fuzz_message_))                                  \
            ::sb::fuzz::fail(__FILE__, __LINE__, "one-line message:", fuzz_message_); \
    } while (false)
