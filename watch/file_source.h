// FileSource: feeds the Store from Kubernetes JSON on disk (--source file:PATH).
//
// PATH is one JSON file or a folder of *.json files, each a single object or a
// List as `kubectl get services,endpointslices,nodes,pods -A -o json` prints
// it.
// The Store always holds the union of every file's objects (Store::replace).
// A file that cannot be read or is not JSON keeps its last good objects in
// force (logged once per change, counted); a deleted file drops its objects.
// Bad objects inside a good file are skipped, logged and counted.
//
// Thread safety: load(), start() and stop() are meant for one controlling
// thread; append_metrics() may be called from any thread at any time. The
// watcher thread is the only other writer to the Store from this source.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "base/file_watch.h"
#include "base/metrics.h"
#include "base/result.h"
#include "watch/store.h"

namespace sb::watch {

class FileSource {
  public:
    // path: a JSON file or a folder of *.json files. Reads nothing yet.
    FileSource(std::string path, Store& store);
    ~FileSource();  // stops the watcher thread
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;

    // Reads every file once, replaces the Store's objects (Store::replace) and marks it synced.
    // Error (message names the file) when the path is unreadable or a file is not valid JSON at
    // all; bad objects inside a file are logged and counted, not fatal.
    Status load();
    // Watches with inotify on a background thread; changes reach the Store within 1 s.
    Status start();
    void stop();                                          // idempotent
    void append_metrics(metrics::TextWriter& out) const;  // this source's metric families

  private:
    struct FileState {
        Store::Objects objects;  // last good objects of this file
        FileWatch watch;         // the content last decoded; forgotten when unreadable
        std::string last_error;  // empty when the last read was good
    };

    // Re-reads what changed and pushes the union of every file's last good
    // objects to the Store when any of them changed. Returns the first error
    // of this pass (each error is also logged, once per change).
    Status reload();
    // Re-reads one file into `state`; `changed` is set when its objects changed.
    Status read_file(const std::string& file, FileState& state, bool& changed);
    void push_union();
    void run();

    const std::string path_;
    Store& store_;

    // Guards everything below up to the thread: load() and the watcher
    // thread may both reload.
    std::mutex reload_mutex_;
    std::map<std::string, FileState> files_;
    std::string last_path_error_;  // to log an unreadable PATH once per change
    bool pushed_ = false;          // the Store holds our objects
    bool synced_ = false;          // the Store was marked synced

    std::thread thread_;
    int inotify_fd_ = -1;
    int wake_fd_ = -1;           // eventfd: written by stop() to wake the watcher
    int watch_descriptor_ = -1;  // of watch_dir_; owned by the watcher thread once started
    std::string watch_dir_;      // the folder, or the file's parent folder

    std::atomic<uint64_t> rejected_services_{0};
    std::atomic<uint64_t> rejected_slices_{0};
    std::atomic<uint64_t> rejected_nodes_{0};
    std::atomic<uint64_t> rejected_pods_{0};
    std::atomic<uint64_t> rejected_unknown_{0};
    std::atomic<uint64_t> file_errors_{0};
    std::atomic<uint64_t> reloads_{0};
};

}  // namespace sb::watch
