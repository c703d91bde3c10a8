// name_this_thread: gives the calling thread the name that `top -H`, `ps -L`,
// /proc/PID/task/TID/comm, perf and gdb show, so that an operator (or a
// profile) can tell the sync thread from a DNS worker. Every long-lived
// thread of the daemon names itself first thing; docs/daemon.md lists them.
//
// Thread safety: names the caller only. Never throws; a failure (which Linux
// gives only for a name over 15 bytes, cut here first) leaves the old name.
#pragma once

#include <string_view>

namespace sb {

// The kernel keeps 15 bytes of a thread's name; longer names are cut.
inline constexpr size_t kThreadNameMax = 15;

void name_this_thread(std::string_view name) noexcept;

}  // namespace sb
