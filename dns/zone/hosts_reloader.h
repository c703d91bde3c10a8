// HostsReloader: keeps the hosts plugin's table current: builds the first
// one at start, then every `reload` interval, on the process's background
// thread (base/threads/background.h), re-reads the file when its identity (inode,
// size, modification time: base/file_watch.h) changed and publishes a new
// table. A file that cannot be read (missing,
// not a regular file, over kMaxHostsFileBytes or kMaxHostsMappings) keeps
// the last good table (at start: the inline lines only) and is logged once
// per failing stretch.
//
// Thread safety: start() and stop() for one controlling thread; poll() is
// the reload task's (tests call it with the task not started).
#pragma once

#include "base/file_watch.h"
#include "base/threads/background.h"
#include "dns/zone/hosts.h"

namespace sb::dns {

class HostsReloader {
  public:
    // `holder` must outlive the reloader.
    HostsReloader(HostsOptions options, HostsHolder& holder);
    ~HostsReloader();
    HostsReloader(const HostsReloader&) = delete;
    HostsReloader& operator=(const HostsReloader&) = delete;

    // Publishes the first table now, then schedules the reloads (none when
    // the interval is 0 or there is no file).
    void start();
    void stop();  // idempotent; waits for a reload under way

    // Reads the file if it changed since the last good read and publishes a
    // new table; true when it published one.
    bool poll();

  private:
    HostsOptions options_;
    HostsHolder& holder_;
    FileWatch watch_;       // of the last good read
    bool failing_ = false;  // a failure was logged and no good read since
    Background::Task reload_;
};

}  // namespace sb::dns
