// The process collector set of client_golang (process_* metrics), read from
// procfs as client_golang reads it on Linux: /proc/self/stat (CPU time,
// virtual and resident memory, start time with btime from /proc/stat),
// /proc/self/fd (open descriptors) and /proc/self/limits (the soft limits
// on open files and on the address space).
//
// The proc root is a parameter so that unit tests read a made-up tree.
// Thread safety: the functions keep no state; any thread may call them.
#pragma once

#include <optional>
#include <string>

#include "base/metrics.h"

namespace sb::proxy {

struct ProcessStats {
    // Each value is nullopt when its file could not be read or parsed.
    std::optional<double> cpu_seconds;         // utime + stime
    std::optional<double> resident_bytes;      // rss pages x page size
    std::optional<double> virtual_bytes;       // vsize
    std::optional<double> virtual_max_bytes;   // "Max address space" (unlimited: 2^64 - 1)
    std::optional<double> open_fds;            // entries of self/fd
    std::optional<double> max_fds;             // "Max open files"
    std::optional<double> start_time_seconds;  // btime + starttime, since the Unix epoch
};

ProcessStats read_process_stats(const std::string& proc_root = "/proc");

// The process_* families of `stats`; a family whose value is unknown is
// left out.
void write_process_metrics(metrics::TextWriter& out, const ProcessStats& stats);

}  // namespace sb::proxy
