// name_this_thread: gives the calling thread the name that `top -H`, `ps -L`,
// /proc/PID/task/TID/comm, perf and gdb show, so that an operator (or a
// profile) can tell the sync thread from a DNS worker. Every long-lived
// thread of the daemon is started by start_named_thread, so that none runs
// unnamed; docs/daemon.md lists them.
//
// Thread safety: name_this_thread names the caller only. Never throws; a
// failure (which Linux gives only for a name over 15 bytes, cut here first)
// leaves the old name.
#pragma once

#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace sb {

// The kernel keeps 15 bytes of a thread's name; longer names are cut.
inline constexpr size_t kThreadNameMax = 15;

void name_this_thread(std::string_view name) noexcept;

// A new thread that names itself `name` (name_this_thread) and then runs
// `body`. The name is copied; `body` is moved into the thread, and what it
// throws is its own to catch, as with std::thread.
template <typename Body>
std::thread start_named_thread(std::string_view name, Body body) {
    return std::thread([name = std::string(name), body = std::move(body)]() mutable {
        name_this_thread(name);
        body();
    });
}

}  // namespace sb
