#include "watch/file_source.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "base/file_text.h"
#include "base/log.h"
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

// The *.json regular files of a folder (symlinks followed), sorted. Hidden
// names are skipped: editors keep lock and swap files there.
Result<std::set<std::string>> list_json_files(const std::string& folder) {
    DIR* dir = ::opendir(folder.c_str());
    if (!dir) return io_error(fmt::format("cannot read folder {}", folder));
    std::set<std::string> files;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string_view name = entry->d_name;
        if (name.empty() || name[0] == '.' || name.size() <= 5 ||
            name.substr(name.size() - 5) != ".json") {
            continue;
        }
        std::string file = folder + (folder.back() == '/' ? "" : "/") + std::string(name);
        struct stat st {};
        if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files.insert(std::move(file));
    }
    ::closedir(dir);
    return files;
}

std::string parent_folder(const std::string& file) {
    const auto slash = file.find_last_of('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return file.substr(0, slash);
}

// Appends `from` to `into`, a later object replacing an earlier one with the
// same key (files are visited in name order, so the last file wins).
template <typename T>
void merge(std::vector<T>& into, std::map<ObjectKey, size_t>& index, const std::vector<T>& from,
           const char* kind, const std::string& file) {
    for (const T& object : from) {
        auto [it, inserted] = index.emplace(object.meta.key(), into.size());
        if (inserted) {
            into.push_back(object);
        } else {
            log::warn("file source: {} {} defined twice; the one in {} wins", kind,
                      object.meta.key().to_string(), file);
            into[it->second] = object;
        }
    }
}

}  // namespace

FileSource::FileSource(std::string path, Store& store) : path_(std::move(path)), store_(store) {}

FileSource::~FileSource() {
    stop();
}

Status FileSource::load() {
    return reload();
}

Status FileSource::reload() {
    std::lock_guard lock(reload_mutex_);
    struct stat st {};
    std::set<std::string> names;
    if (::stat(path_.c_str(), &st) != 0) {
        Error error = io_error(fmt::format("file source: cannot read {}", path_));
        if (error.describe() != last_path_error_) {
            last_path_error_ = error.describe();
            log::warn("{} (keeping the last good objects)", last_path_error_);
            ++file_errors_;
        }
        return error;
    }
    if (S_ISDIR(st.st_mode)) {
        auto listed = list_json_files(path_);
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
        names = std::move(*listed);
    } else {
        names.insert(path_);
    }
    last_path_error_.clear();

    bool changed = !pushed_;
    for (auto it = files_.begin(); it != files_.end();) {
        if (names.count(it->first)) {
            ++it;
            continue;
        }
        log::info("file source: {} is gone; its objects are removed", it->first);
        it = files_.erase(it);
        changed = true;
    }
    Status first_error;
    for (const auto& name : names) {
        Status status = read_file(name, files_[name], changed);
        if (!status && first_error) first_error = status;
    }
    if (changed) push_union();
    if (first_error && !synced_) {
        store_.set_synced(true);
        synced_ = true;
    }
    return first_error;
}

Status FileSource::read_file(const std::string& file, FileState& state, bool& changed) {
    auto content = read_whole_file(file);
    if (!content) {
        // Unreadable for now (permissions, a race with a rename): keep the
        // last good objects, report once per distinct error.
        const std::string message = fmt::format("file source: {}", content.error().describe());
        if (message != state.last_error) {
            log::warn("{} (keeping its last good objects)", message);
            ++file_errors_;
            state.last_error = message;
        }
        state.watch.forget();
        return make_error(ErrorCode::kIo, message);
    }
    if (!state.watch.changed(*content)) {
        if (state.last_error.empty()) return {};
        return make_error(ErrorCode::kInvalidArgument, state.last_error);
    }

    auto document = decode_document(*content);
    if (!document) {
        state.last_error = fmt::format("file source: {}: {}", file, document.error().message);
        log::warn("{} (keeping its last good objects)", state.last_error);
        ++file_errors_;
        return make_error(ErrorCode::kInvalidArgument, state.last_error);
    }
    state.last_error.clear();
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
    state.objects = std::move(document->objects);
    changed = true;
    return {};
}

void FileSource::push_union() {
    Store::Objects all;
    std::map<ObjectKey, size_t> services, slices, nodes, pods;
    for (const auto& [file, state] : files_) {
        merge(all.services, services, state.objects.services, "Service", file);
        merge(all.endpoint_slices, slices, state.objects.endpoint_slices, "EndpointSlice", file);
        merge(all.nodes, nodes, state.objects.nodes, "Node", file);
        merge(all.pods, pods, state.objects.pods, "Pod", file);
    }
    log::debug("file source: {} services, {} endpoint slices, {} nodes, {} pods from {}",
               all.services.size(), all.endpoint_slices.size(), all.nodes.size(), all.pods.size(),
               path_);
    store_.replace(std::move(all));
    pushed_ = true;
    ++reloads_;
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
    thread_ = std::thread(&FileSource::run, this);
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
    bool pending = false;
    Clock::time_point first_event, last_event;
    alignas(inotify_event) char buffer[16384];
    while (true) {
        int timeout = -1;
        if (pending) {
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
            ssize_t n;
            while ((n = ::read(inotify_fd_, buffer, sizeof buffer)) > 0) {
                for (ssize_t offset = 0; offset < n;) {
                    const auto* event = reinterpret_cast<const inotify_event*>(buffer + offset);
                    // The folder itself went away (deleted, unmounted,
                    // renamed: a renamed folder is no longer PATH): stop
                    // watching it and watch PATH again once it is back.
                    const bool gone = event->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF);
                    if (gone && watching && event->wd == watch_descriptor_) {
                        ::inotify_rm_watch(inotify_fd_, watch_descriptor_);
                        watching = false;
                    }
                    offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
                }
            }
            const auto now = Clock::now();
            if (!pending) first_event = now;
            last_event = now;
            pending = true;
            continue;
        }
        if (!watching) {
            watch_descriptor_ = ::inotify_add_watch(inotify_fd_, watch_dir_.c_str(), kWatchMask);
            if (watch_descriptor_ >= 0) {
                log::info("file source: watching {} again", watch_dir_);
                watching = true;
                pending = true;
                first_event = last_event = Clock::now();
            }
            if (!pending) continue;
        }
        if (pending &&
            Clock::now() >= std::min(last_event + kQuietPeriod, first_event + kMaxDelay)) {
            pending = false;
            // Errors were logged (once per change) by reload itself.
            [[maybe_unused]] Status status = reload();
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
    static const metrics::Family kReloads{"switchboard_source_reloads_total",
                                          "Times the file source pushed its objects to the store.",
                                          metrics::Type::kCounter,
                                          {}};
    out.family(kRejected);
    out.sample({"Service"}, rejected_services_.load());
    out.sample({"EndpointSlice"}, rejected_slices_.load());
    out.sample({"Node"}, rejected_nodes_.load());
    out.sample({"Pod"}, rejected_pods_.load());
    out.sample({"unknown"}, rejected_unknown_.load());
    out.family(kFileErrors);
    out.sample({}, file_errors_.load());
    out.family(kReloads);
    out.sample({}, reloads_.load());
}

}  // namespace sb::watch
