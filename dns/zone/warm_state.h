// The warm DNS state's file: the last synced zone, kept in the node state
// folder (proxy/app/node_state.h) so that a new process answers from it at
// once, before its own first sync (docs/dns.md, "Warm start"). The bytes are
// Zone's state codec (zone.h: state_bytes, from_state_bytes).
//
// Thread safety: load() from any thread; write() and write_in_background()
// from any thread, calls serialised by an internal mutex; the counters from
// any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/result.h"
#include "dns/zone/zone.h"

namespace sb::dns {

class WarmStateFile {
  public:
    // `identity`: whose state it is (the boot and network namespace); a file
    // written under another is refused.
    WarmStateFile(std::string path, std::string identity);

    // The zone the file holds for `config`. kNotFound when there is no file;
    // any other error is one line naming the file and why it is ignored
    // (unreadable, over Zone::kMaxStateBytes, corrupt, another version,
    // identity or configuration).
    Result<std::shared_ptr<const Zone>> load(const ZoneConfig& config) const;

    // Writes `zone` (a synced one) in place of the file, atomically: the
    // bytes go to PATH.tmp, which is then renamed over PATH, so a reader (or
    // a crash) sees the old file or the new one, never a part. Idempotent
    // for a zone already written (nothing is written again).
    Status write(const std::shared_ptr<const Zone>& zone);
    // write() for a background thread: `before_piece` runs before each
    // piece of about 64 KiB (it may sleep, to leave the CPU to others), and
    // the write gives way to a write() called meanwhile at its next piece;
    // the given-up file is removed. Neither reaches the codec's first pass,
    // which measures the whole zone for the header before the first piece
    // (Zone::write_state; about half the write's CPU): that write() waits
    // for the rest of it, or for one piece and one `before_piece`. False
    // when it gave way (nothing is counted); else as write().
    Result<bool> write_in_background(const std::shared_ptr<const Zone>& zone,
                                     const std::function<void()>& before_piece);

    const std::string& path() const { return path_; }
    uint64_t writes() const { return writes_.load(std::memory_order_relaxed); }
    uint64_t write_failures() const { return write_failures_.load(std::memory_order_relaxed); }

  private:
    // `before_piece` null: a write() that gives way to nothing.
    Result<bool> write_locked(const std::shared_ptr<const Zone>& zone,
                              const std::function<void()>* before_piece);

    const std::string path_;
    const std::string identity_;
    std::mutex write_mutex_;
    std::weak_ptr<const Zone> written_;   // guarded by write_mutex_
    std::atomic<int> writes_waiting_{0};  // write() calls waiting for write_mutex_
    std::atomic<uint64_t> writes_{0};
    std::atomic<uint64_t> write_failures_{0};
};

}  // namespace sb::dns
