// FileSource: feeds the Store from Kubernetes JSON on disk (--source file:PATH).
//
// PATH is one JSON file or a folder of *.json files, each a single object or a
// List as `kubectl get services,endpointslices,nodes,pods,servicecidrs -A -o json` prints
// it.
// The Store always holds the union of every file's objects; when two files
// define the same object, the file later in name order wins (warned), and in
// one file the later item wins. A file that cannot be read or is not JSON
// keeps its last good objects in force (logged once per change, counted); a
// deleted file drops its objects. Bad objects inside a good file are skipped,
// logged and counted.
//
// What a change costs: a pass after inotify's events re-reads only the files
// the events name (created, written, renamed in or out, deleted, chmod-ed),
// plus the files that are symlinks (what they point at can change under
// another name: a ConfigMap volume's ..data swap), and writes only the objects
// of those files that changed to the Store, in one batch (Store::apply). A
// full pass (every file read, Store::replace with the union) runs on load(),
// for a single-file PATH, when the event queue overflowed, when the folder's
// own attributes changed, and when the folder is watched anew.
//
// Thread safety: load(), start() and stop() are meant for one controlling
// thread; reread() may be called from any thread (it serialises with the
// watcher thread's passes); append_metrics() may be called from any thread
// at any time. load(), reread() and the watcher thread's passes are this
// source's only writes to the Store, one at a time (reload_mutex_).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/file_watch.h"
#include "base/metrics.h"
#include "base/result.h"
#include "watch/store.h"

namespace sb::watch {

// What inotify's events on the watched folder ask a pass to re-read.
struct TouchedNames {
    std::set<std::string> names;  // entries of the folder (no '/'), as the events name them
    bool everything = false;      // names were lost (the queue overflowed) or the folder changed
    bool empty() const { return names.empty() && !everything; }
};

// Adds the events in `events` (inotify_event records as read(2) returns
// them) to `touched`: the names of the entries they concern, or `everything`
// on IN_Q_OVERFLOW. Returns true when the watch `folder_watch` itself ended
// (the folder was deleted, moved away or unmounted); `everything` is then
// set too. Pure: reads no file.
bool note_folder_events(std::span<const char> events, int folder_watch, TouchedNames& touched);

class FileSource {
  public:
    // path: a JSON file or a folder of *.json files. Reads nothing yet.
    FileSource(std::string path, Store& store);
    ~FileSource();  // stops the watcher thread
    FileSource(const FileSource&) = delete;
    FileSource& operator=(const FileSource&) = delete;

    // A full pass: reads every file once, replaces the Store's objects
    // (Store::replace) and marks it synced. Error (message names the file) when
    // the path is unreadable or a file is not valid JSON at all; bad objects
    // inside a file are logged and counted, not fatal.
    Status load();
    // Watches with inotify on a background thread; changes reach the Store within 1 s.
    Status start();
    void stop();                                          // idempotent
    void append_metrics(metrics::TextWriter& out) const;  // this source's metric families

    // The pass the watcher thread runs after a quiet period: re-reads the
    // files `touched` names and the symlinked ones, and applies what changed
    // to the Store in one batch; a full pass when `touched.everything`, for a
    // single-file PATH, or when PATH is no folder (gone). Returns the first
    // error of a file still in error after the pass (each error is logged
    // once per change). Public for tests; after load().
    Status reread(const TouchedNames& touched);

  private:
    struct FileState {
        Store::Objects objects;  // last good objects of this file, one per key
        FileWatch watch;         // the content last decoded; forgotten when unreadable
        std::string last_error;  // empty when the last read was good
    };
    using Files = std::map<std::string, FileState>;  // by path
    // One file's definition of an object: the object at `position` in the
    // file's vector of that kind.
    struct Definition {
        Files::iterator file;
        size_t position;
    };
    // Object key -> the files defining it, in name order: the last one's
    // object is the one in the Store. One per Kind (watch/store.h).
    using Index = std::map<ObjectKey, std::vector<Definition>>;
    // Object keys a pass touched, per Kind: written to the Store after it.
    using TouchedKeys = std::array<std::set<ObjectKey>, kKindValues>;

    Status full_pass();
    // Re-reads `file` (a path in the folder, or PATH itself): drops its
    // objects when it is no longer a regular file (symlinks followed).
    void reread_entry(const std::string& file, TouchedKeys& touched);
    // Re-reads one file into `entry` (created by the caller); the keys of
    // its objects that changed go to `touched`. Errors are logged once per
    // change, counted, and kept in the entry's last_error and broken_.
    void read_file(Files::iterator entry, TouchedKeys& touched);
    // Removes `entry` and its objects.
    void drop_file(Files::iterator entry, TouchedKeys& touched);
    // Makes `fresh` the objects of kind T that `entry` defines, updating the
    // index; the keys whose winning object may differ go to `touched`.
    template <typename T>
    void set_objects(Files::iterator entry, std::vector<T> fresh, TouchedKeys& touched);
    // The Store's view of the touched keys: their winning objects, and
    // removals for the keys no file defines any more.
    void push_touched(const TouchedKeys& touched);
    // Store::replace with every key's winning object.
    void push_union();
    // Logs and counts a new error of `entry`'s file and keeps it as its last.
    void report_error(Files::iterator entry, std::string message);
    void clear_error(Files::iterator entry);
    // The first file still in error (name order), or ok.
    Status first_file_error() const;
    void mark_synced_when_clean();
    void run();

    const std::string path_;
    Store& store_;

    // Guards everything below up to the thread: load(), reread() and the
    // watcher thread may all read files.
    std::mutex reload_mutex_;
    Files files_;
    std::array<Index, kKindValues> index_;
    std::set<std::string> broken_;    // files whose last_error is set
    std::set<std::string> symlinks_;  // files that are symlinks: re-read on every pass
    std::string last_path_error_;     // to log an unreadable PATH once per change
    bool pushed_ = false;             // the Store holds our objects
    bool synced_ = false;             // the Store was marked synced

    std::thread thread_;
    int inotify_fd_ = -1;
    int wake_fd_ = -1;           // eventfd: written by stop() to wake the watcher
    int watch_descriptor_ = -1;  // of watch_dir_; owned by the watcher thread once started
    std::string watch_dir_;      // the folder, or the file's parent folder

    std::atomic<uint64_t> rejected_services_{0};
    std::atomic<uint64_t> rejected_slices_{0};
    std::atomic<uint64_t> rejected_nodes_{0};
    std::atomic<uint64_t> rejected_pods_{0};
    std::atomic<uint64_t> rejected_service_cidrs_{0};
    std::atomic<uint64_t> rejected_unknown_{0};
    std::atomic<uint64_t> file_errors_{0};
    std::atomic<uint64_t> files_read_{0};
    std::atomic<uint64_t> reloads_{0};
};

}  // namespace sb::watch
