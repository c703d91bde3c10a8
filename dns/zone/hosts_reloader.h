// HostsReloader: keeps the hosts plugin's table current: builds the first
// one at start, then every `reload` interval, on a thread of its own,
// re-reads the file when its identity (inode, size, modification time)
// changed and publishes a new table. A file that cannot be read (missing,
// not a regular file, over kMaxHostsFileBytes or kMaxHostsMappings) keeps
// the last good table (at start: the inline lines only) and is logged once
// per failing stretch.
//
// Thread safety: start() and stop() for one controlling thread; poll() is
// the reload thread's (tests call it with the thread not started).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "dns/zone/hosts.h"

namespace sb::dns {

class HostsReloader {
  public:
    // `holder` must outlive the reloader.
    HostsReloader(HostsOptions options, HostsHolder& holder);
    ~HostsReloader();
    HostsReloader(const HostsReloader&) = delete;
    HostsReloader& operator=(const HostsReloader&) = delete;

    // Publishes the first table now, then starts the reload thread (none
    // when the interval is 0 or there is no file).
    void start();
    void stop();  // idempotent

    // Reads the file if it changed since the last good read and publishes a
    // new table; true when it published one.
    bool poll();

  private:
    struct Identity {
        uint64_t device = 0;
        uint64_t inode = 0;
        int64_t size = -1;
        int64_t mtime_ns = 0;
        bool operator==(const Identity&) const = default;
    };

    void run();

    HostsOptions options_;
    HostsHolder& holder_;
    Identity last_;         // of the last good read; size -1: none yet
    bool failing_ = false;  // a failure was logged and no good read since
    std::mutex mutex_;
    std::condition_variable cv_;
    bool stopping_ = false;  // guarded by mutex_
    std::thread thread_;
};

}  // namespace sb::dns
