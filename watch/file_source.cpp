#include "watch/file_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "base/file_text.h"
#include "base/log.h"
#include "base/threads/thread_name.h"
#include "watch/decode.h"

namespace sb::watch {

namespace {

using Clock = std::chrono::steady_clock;

// Writers (editors, kubectl > file, ConfigMap updates) touch several names
// in a burst: wait for 100 ms of quiet, but never more than 500 ms after the
// first event, so that a change reaches the Store within 1 s.
constexpr auto kQuietPeriod = std::chrono::milliseconds(100);
constexpr auto kMaxDelay = std::chrono::milliseconds(500);
// While the watched folder is gone, try to watch it again this often.
constexpr int kRewatchMillis = 1000;
// Bad objects logged per file and change; the rest are only counted.
constexpr size_t kMaxLoggedObjectErrors = 20;

constexpr uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                IN_CLOSE_WRITE | IN_MODIFY | IN_ATTRIB | IN_DELETE_SELF |
                                IN_MOVE_SELF;

Error io_error(const std::string& message) {
    return make_error(ErrorCode::kIo, message, errno);
}

Result<std::string> read_whole_file(const std::string& file) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error(fmt::format("cannot read {}", file));
    auto content = read_open_file(fd, file, std::numeric_limits<size_t>::max());
    ::close(fd);
    return content;
}

// The folder entries a folder source reads: *.json, not hidden (editors keep
// lock and swap files there).
bool is_json_name(std::string_view name) {
    return name.size() > 5 && name[0] != '.' && name.substr(name.size() - 5) == ".json";
}

std::string in_folder(const std::string& folder, std::string_view name) {
    return folder + (folder.back() == '/' ? "" : "/") + std::string(name);
}

// The *.json names of a folder as paths in it, sorted; what they are is
// looked at when they are read.
Result<std::set<std::string>> list_json_files(const std::string& folder) {
    DIR* dir = ::opendir(folder.c_str());
    if (!dir) return io_error(fmt::format("cannot read folder {}", folder));
    std::set<std::string> files;
    while (const dirent* entry = ::readdir(dir)) {
        if (is_json_name(entry->d_name)) files.insert(in_folder(folder, entry->d_name));
    }
    ::closedir(dir);
    return files;
}

// What a path is: the file source reads regular files, symlinks followed.
struct EntryType {
    bool regular = false;
    bool symlink = false;
};

EntryType entry_type(const std::string& file) {
    EntryType type;
    struct stat st {};
    if (::lstat(file.c_str(), &st) != 0) return type;
    type.symlink = S_ISLNK(st.st_mode);
    if (type.symlink && ::stat(file.c_str(), &st) != 0) return type;
    type.regular = S_ISREG(st.st_mode);
    return type;
}

std::string parent_folder(const std::string& file) {
    const auto slash = file.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return file.substr(0, slash);
}

// Index of T's Kind in the per-kind arrays.
template <typename T>
constexpr size_t kKind = static_cast<size_t>(kind_of<T>);

template <typename T>
constexpr const char* kKindName = std::is_same_v<T, Service>         ? "Service"
                                  : std::is_same_v<T, EndpointSlice> ? "EndpointSlice"
                                  : std::is_same_v<T, Node>          ? "Node"
                                  : std::is_same_v<T, Pod>           ? "Pod"
                                                                     : "ServiceCIDR";

template <typename T>
std::vector<T>& objects_of(Store::Objects& objects) {
    if constexpr (std::is_same_v<T, Service>) {
        return objects.services;
    } else if constexpr (std::is_same_v<T, EndpointSlice>) {
        return objects.endpoint_slices;
    } else if constexpr (std::is_same_v<T, Node>) {
        return objects.nodes;
    } else if constexpr (std::is_same_v<T, Pod>) {
        return objects.pods;
    } else {
        return objects.service_cidrs;
    }
}

// Calls `visit(std::type_identity<T>{})` once per model type T, in the order of Kind.
template <typename Visit>
void for_each_kind(Visit visit) {
    visit(std::type_identity<Service>{});
    visit(std::type_identity<EndpointSlice>{});
    visit(std::type_identity<Node>{});
    visit(std::type_identity<Pod>{});
    visit(std::type_identity<ServiceCIDR>{});
}

// One object per key: a later item replaces an earlier one with the same key.
template <typename T>
std::vector<T> last_of_each_key(std::vector<T> objects, const std::string& file) {
    if (objects.size() < 2) return objects;
    std::map<ObjectKey, size_t> at;
    std::vector<T> unique;
    unique.reserve(objects.size());
    for (T& object : objects) {
        auto [it, inserted] = at.emplace(object.meta.key(), unique.size());
        if (inserted) {
            unique.push_back(std::move(object));
        } else {
            log::warn("file source: {} {} defined twice in {}; the later one wins", kKindName<T>,
                      it->first.to_string(), file);
            unique[it->second] = std::move(object);
        }
    }
    return unique;
}

}  // namespace

bool note_folder_events(std::span<const char> events, int folder_watch, TouchedNames& touched) {
    bool gone = false;
    for (size_t offset = 0; offset + sizeof(inotify_event) <= events.size();) {
        inotify_event event;
        std::memcpy(&event, events.data() + offset, sizeof event);
        const char* name = events.data() + offset + sizeof event;
        offset += sizeof event + event.len;
        if (offset > events.size()) break;  // a truncated record: read(2) never returns one
        if (event.mask & IN_Q_OVERFLOW) {
            touched.everything = true;
        } else if (event.wd != folder_watch) {
            continue;  // the last events of a watch already removed
        } else if (event.mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF)) {
            // The folder itself went away (deleted, unmounted, renamed: a
            // renamed folder is no longer PATH).
            gone = true;
            touched.everything = true;
        } else if (event.len > 0) {
            touched.names.emplace(name, ::strnlen(name, event.len));
        } else {
            touched.everything = true;  // the folder's own attributes: maybe unreadable now
        }
    }
    return gone;
}

FileSource::FileSource(std::string path, Store& store) : path_(std::move(path)), store_(store) {}

FileSource::~FileSource() {
    stop();
}

Status FileSource::load() {
    std::lock_guard lock(reload_mutex_);
    return full_pass();
}

Status FileSource::reread(const TouchedNames& touched) {
    std::lock_guard lock(reload_mutex_);
    struct stat st {};
    if (touched.everything || !pushed_ || ::stat(path_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        return full_pass();
    }
    std::set<std::string> files = symlinks_;
    for (const auto& name : touched.names) {
        if (is_json_name(name)) files.insert(in_folder(path_, name));
    }
    TouchedKeys keys;
    for (const auto& file : files) reread_entry(file, keys);
    push_touched(keys);
    mark_synced_when_clean();
    return first_file_error();
}

Status FileSource::full_pass() {
    struct stat st {};
    Result<std::set<std::string>> listed = std::set<std::string>{path_};
    if (::stat(path_.c_str(), &st) != 0) {
        listed = io_error(fmt::format("cannot read {}", path_));
    } else if (S_ISDIR(st.st_mode)) {
        listed = list_json_files(path_);
    }
    if (!listed) {
        Error error = listed.error();
        error.message = fmt::format("file source: {}", error.message);
        if (error.describe() != last_path_error_) {
            last_path_error_ = error.describe();
            log::warn("{} (keeping the last good objects)", last_path_error_);
            ++file_errors_;
        }
        return error;
    }
    last_path_error_.clear();

    TouchedKeys keys;
    for (auto it = files_.begin(); it != files_.end();) {
        const auto next = std::next(it);
        if (!listed->count(it->first)) {
            log::info("file source: {} is gone; its objects are removed", it->first);
            drop_file(it, keys);
        }
        it = next;
    }
    for (const auto& file : *listed) reread_entry(file, keys);
    const bool changed =
        std::any_of(keys.begin(), keys.end(), [](const auto& k) { return !k.empty(); });
    if (changed || !pushed_) push_union();
    mark_synced_when_clean();
    return first_file_error();
}

void FileSource::reread_entry(const std::string& file, TouchedKeys& touched) {
    const EntryType type = entry_type(file);
    auto entry = files_.find(file);
    if (!type.regular) {
        if (entry != files_.end()) {
            log::info("file source: {} is gone; its objects are removed", file);
            drop_file(entry, touched);
        }
        return;
    }
    if (entry == files_.end()) entry = files_.try_emplace(file).first;
    if (type.symlink) {
        symlinks_.insert(file);
    } else {
        symlinks_.erase(file);
    }
    read_file(entry, touched);
}

void FileSource::read_file(Files::iterator entry, TouchedKeys& touched) {
    const std::string& file = entry->first;
    FileState& state = entry->second;
    ++files_read_;
    auto content = read_whole_file(file);
    if (!content) {
        // Unreadable for now (permissions, a race with a rename): keep the
        // last good objects, report once per distinct error.
        std::string message = fmt::format("file source: {}", content.error().describe());
        if (message != state.last_error) report_error(entry, message);
        state.watch.forget();
        return;
    }
    if (!state.watch.changed(*content)) return;

    auto document = decode_document(*content);
    if (!document) {
        // New content (the hash changed): reported even when the text is the last one's.
        report_error(entry, fmt::format("file source: {}: {}", file, document.error().message));
        return;
    }
    clear_error(entry);
    size_t logged = 0;
    for (const auto& error : document->errors) {
        if (error.kind == "Service") {
            ++rejected_services_;
        } else if (error.kind == "EndpointSlice") {
            ++rejected_slices_;
        } else if (error.kind == "Node") {
            ++rejected_nodes_;
        } else if (error.kind == "Pod") {
            ++rejected_pods_;
        } else if (error.kind == "ServiceCIDR") {
            ++rejected_service_cidrs_;
        } else {
            ++rejected_unknown_;
        }
        if (logged++ < kMaxLoggedObjectErrors) {
            log::warn("file source: {}: skipped {}", file, error.describe());
        }
    }
    if (document->errors.size() > kMaxLoggedObjectErrors) {
        log::warn("file source: {}: {} more objects skipped", file,
                  document->errors.size() - kMaxLoggedObjectErrors);
    }
    for_each_kind([&]<typename T>(std::type_identity<T>) {
        set_objects<T>(entry, last_of_each_key(std::move(objects_of<T>(document->objects)), file),
                       touched);
    });
}

void FileSource::drop_file(Files::iterator entry, TouchedKeys& touched) {
    for_each_kind([&]<typename T>(std::type_identity<T>) { set_objects<T>(entry, {}, touched); });
    broken_.erase(entry->first);
    symlinks_.erase(entry->first);
    files_.erase(entry);
}

template <typename T>
void FileSource::set_objects(Files::iterator entry, std::vector<T> fresh, TouchedKeys& touched) {
    std::vector<T>& held = objects_of<T>(entry->second.objects);
    Index& index = index_[kKind<T>];
    std::set<ObjectKey>& keys = touched[kKind<T>];
    // This file's old definitions leave the index; their positions tell
    // which objects are unchanged.
    std::map<ObjectKey, size_t> old;
    for (size_t i = 0; i < held.size(); ++i) {
        auto key = held[i].meta.key();
        auto defined = index.find(key);
        auto& definitions = defined->second;
        std::erase_if(definitions, [&](const Definition& d) { return d.file == entry; });
        if (definitions.empty()) index.erase(defined);
        old.emplace(std::move(key), i);
    }
    for (size_t i = 0; i < fresh.size(); ++i) {
        auto key = fresh[i].meta.key();
        auto& definitions = index[key];
        auto at = std::upper_bound(
            definitions.begin(), definitions.end(), entry->first,
            [](const std::string& file, const Definition& d) { return file < d.file->first; });
        definitions.insert(at, Definition{entry, i});
        if (definitions.size() > 1) {
            log::warn("file source: {} {} defined twice; the one in {} wins", kKindName<T>,
                      key.to_string(), definitions.back().file->first);
        }
        auto was = old.find(key);
        if (was == old.end()) {
            keys.insert(std::move(key));
        } else {
            if (!(held[was->second] == fresh[i])) keys.insert(std::move(key));
            old.erase(was);
        }
    }
    for (auto& [key, position] : old) keys.insert(key);
    held = std::move(fresh);
}

void FileSource::push_touched(const TouchedKeys& touched) {
    std::vector<Store::Removal> removals;
    Store::Objects upserts;
    for_each_kind([&]<typename T>(std::type_identity<T>) {
        const Index& index = index_[kKind<T>];
        for (const auto& key : touched[kKind<T>]) {
            auto defined = index.find(key);
            if (defined == index.end()) {
                removals.push_back({kind_of<T>, key});
                continue;
            }
            const Definition& winner = defined->second.back();
            objects_of<T>(upserts).push_back(
                objects_of<T>(winner.file->second.objects)[winner.position]);
        }
    });
    if (removals.empty() && upserts.services.empty() && upserts.endpoint_slices.empty() &&
        upserts.nodes.empty() && upserts.pods.empty() && upserts.service_cidrs.empty()) {
        return;
    }
    store_.apply(removals, std::move(upserts));
    ++reloads_;
}

void FileSource::push_union() {
    Store::Objects all;
    for_each_kind([&]<typename T>(std::type_identity<T>) {
        std::vector<T>& into = objects_of<T>(all);
        into.reserve(index_[kKind<T>].size());
        for (const auto& [key, definitions] : index_[kKind<T>]) {
            const Definition& winner = definitions.back();
            into.push_back(objects_of<T>(winner.file->second.objects)[winner.position]);
        }
    });
    log::debug(
        "file source: {} services, {} endpoint slices, {} nodes, {} pods, {} service CIDRs from {}",
        all.services.size(), all.endpoint_slices.size(), all.nodes.size(), all.pods.size(),
        all.service_cidrs.size(), path_);
    store_.replace(std::move(all));
    pushed_ = true;
    ++reloads_;
}

void FileSource::report_error(Files::iterator entry, std::string message) {
    log::warn("{} (keeping its last good objects)", message);
    ++file_errors_;
    entry->second.last_error = std::move(message);
    broken_.insert(entry->first);
}

void FileSource::clear_error(Files::iterator entry) {
    entry->second.last_error.clear();
    broken_.erase(entry->first);
}

Status FileSource::first_file_error() const {
    if (broken_.empty()) return {};
    return make_error(ErrorCode::kInvalidArgument, files_.at(*broken_.begin()).last_error);
}

void FileSource::mark_synced_when_clean() {
    if (synced_ || !broken_.empty()) return;
    store_.set_synced(true);
    synced_ = true;
}

Status FileSource::start() {
    if (thread_.joinable()) return {};
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) {
        return io_error(fmt::format("file source: cannot read {}", path_));
    }
    watch_dir_ = S_ISDIR(st.st_mode) ? path_ : parent_folder(path_);

    inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0) return io_error("file source: inotify_init1");
    wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    watch_descriptor_ =
        wake_fd_ < 0 ? -1 : ::inotify_add_watch(inotify_fd_, watch_dir_.c_str(), kWatchMask);
    if (wake_fd_ < 0 || watch_descriptor_ < 0) {
        Error error = io_error(fmt::format("file source: cannot watch {}", watch_dir_));
        ::close(inotify_fd_);
        if (wake_fd_ >= 0) ::close(wake_fd_);
        inotify_fd_ = wake_fd_ = -1;
        return error;
    }
    thread_ = start_named_thread("sb-file-source", [this] { run(); });
    return {};
}

void FileSource::stop() {
    if (thread_.joinable()) {
        const uint64_t one = 1;
        // A full counter (never, with one writer) would still leave it readable.
        [[maybe_unused]] const ssize_t written = ::write(wake_fd_, &one, sizeof one);
        thread_.join();
    }
    if (inotify_fd_ >= 0) ::close(inotify_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    inotify_fd_ = wake_fd_ = -1;
}

void FileSource::run() {
    bool watching = watch_descriptor_ >= 0;
    TouchedNames touched;  // since the last pass
    Clock::time_point first_event, last_event;
    alignas(inotify_event) char buffer[16384];
    while (true) {
        int timeout = -1;
        if (!touched.empty()) {
            const auto due = std::min(last_event + kQuietPeriod, first_event + kMaxDelay);
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(due - Clock::now()).count();
            timeout = static_cast<int>(std::max<int64_t>(left, 0));
        } else if (!watching) {
            timeout = kRewatchMillis;
        }
        pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {inotify_fd_, POLLIN, 0}};
        const int ready = ::poll(fds, 2, timeout);
        if (ready < 0 && errno != EINTR) {
            log::error("file source: poll failed ({}); no longer watching {}", errno, path_);
            return;
        }
        if (fds[0].revents) return;
        if (ready > 0 && fds[1].revents) {
            const bool was_pending = !touched.empty();
            ssize_t n;
            while ((n = ::read(inotify_fd_, buffer, sizeof buffer)) > 0) {
                const bool gone = note_folder_events({buffer, static_cast<size_t>(n)},
                                                     watch_descriptor_, touched);
                // Watch PATH again once it is back.
                if (gone && watching) {
                    ::inotify_rm_watch(inotify_fd_, watch_descriptor_);
                    watching = false;
                }
            }
            if (!touched.empty()) {
                const auto now = Clock::now();
                if (!was_pending) first_event = now;
                last_event = now;
            }
            continue;
        }
        if (!watching) {
            watch_descriptor_ = ::inotify_add_watch(inotify_fd_, watch_dir_.c_str(), kWatchMask);
            if (watch_descriptor_ >= 0) {
                log::info("file source: watching {} again", watch_dir_);
                watching = true;
                // What changed while nobody watched is unknown.
                if (touched.empty()) first_event = last_event = Clock::now();
                touched.everything = true;
            }
            if (touched.empty()) continue;
        }
        if (!touched.empty() &&
            Clock::now() >= std::min(last_event + kQuietPeriod, first_event + kMaxDelay)) {
            const TouchedNames pass = std::exchange(touched, {});
            // Errors were logged (once per change) by the pass itself.
            [[maybe_unused]] Status status = reread(pass);
        }
    }
}

void FileSource::append_metrics(metrics::TextWriter& out) const {
    static const metrics::Family kRejected{"switchboard_source_objects_rejected_total",
                                           "Objects skipped because they failed validation.",
                                           metrics::Type::kCounter,
                                           {"kind"}};
    static const metrics::Family kFileErrors{
        "switchboard_source_file_errors_total",
        "Source files that could not be read or parsed (once per change).",
        metrics::Type::kCounter,
        {}};
    static const metrics::Family kFilesRead{
        "switchboard_source_files_read_total",
        "Files the file source read: a change reads the files it names, a full pass every file.",
        metrics::Type::kCounter,
        {}};
    static const metrics::Family kReloads{
        "switchboard_source_reloads_total",
        "Times the file source wrote changed objects to the store.",
        metrics::Type::kCounter,
        {}};
    out.family(kRejected);
    out.sample({"Service"}, rejected_services_.load());
    out.sample({"EndpointSlice"}, rejected_slices_.load());
    out.sample({"Node"}, rejected_nodes_.load());
    out.sample({"Pod"}, rejected_pods_.load());
    out.sample({"ServiceCIDR"}, rejected_service_cidrs_.load());
    out.sample({"unknown"}, rejected_unknown_.load());
    out.family(kFileErrors);
    out.sample({}, file_errors_.load());
    out.family(kFilesRead);
    out.sample({}, files_read_.load());
    out.family(kReloads);
    out.sample({}, reloads_.load());
}

}  // namespace sb::watch
