// libFuzzer target: the names that travel with passed sockets
// (base/listeners/fd_passing.h), bytes another process chose: the
// environment's LISTEN_PID / LISTEN_FDS / LISTEN_FDNAMES (parse_listen_fds)
// and a message of the supervisor's or the hand-over's channel
// (decode_fd_message). The first byte picks the parser and, for a message,
// how many sockets came with it (0-69: also more than may be passed).
// Invariants checked: every error is one line; never more names than
// kMaxPassedFds; every name valid (or "unknown" for LISTEN_FDS without
// names); a LISTEN_PID other than ours yields no socket; a message that
// decodes encodes back to the same bytes, with one name per socket.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/listeners/fd_passing.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace sb::listeners;

constexpr pid_t kOwnPid = 4242;

// What the parser reads as a number (leading zeros allowed, as systemd's).
size_t number(std::string_view text) {
    size_t value = 0;
    std::from_chars(text.data(), text.data() + text.size(), value);
    return value;
}

void check_listen_fds(std::string_view text) {
    // pid NUL count NUL names, as three variables.
    const size_t first = text.find('\0');
    std::string_view pid = text.substr(0, first);
    std::string_view rest = first == std::string_view::npos ? "" : text.substr(first + 1);
    const size_t second = rest.find('\0');
    std::string_view count = rest.substr(0, second);
    std::string_view names = second == std::string_view::npos ? "" : rest.substr(second + 1);
    auto parsed = parse_listen_fds(pid, count, names, kOwnPid);
    if (!parsed) {
        FUZZ_REQUIRE_ONE_LINE(parsed.error().message);
        return;
    }
    FUZZ_REQUIRE(parsed->size() <= kMaxPassedFds);
    for (const auto& name : *parsed) FUZZ_REQUIRE(valid_fd_name(name) || name == "unknown");
    if (number(pid) != static_cast<size_t>(kOwnPid)) {
        FUZZ_REQUIRE(parsed->empty());
    } else {
        FUZZ_REQUIRE(parsed->size() == number(count));
    }
}

void check_message(std::string_view payload, size_t fd_count) {
    auto message = decode_fd_message(payload, fd_count);
    if (!message) {
        FUZZ_REQUIRE_ONE_LINE(message.error().message);
        return;
    }
    FUZZ_REQUIRE(message->names.size() == fd_count);
    FUZZ_REQUIRE(fd_count <= kMaxPassedFds);
    for (const auto& name : message->names) FUZZ_REQUIRE(valid_fd_name(name));
    FUZZ_REQUIRE(encode_fd_message(message->kind, message->names) == payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (data[0] == 0xFF) {
        check_listen_fds(rest);
    } else {
        check_message(rest, data[0] % 70);
    }
    return 0;
}
