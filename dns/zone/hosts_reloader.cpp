#include "dns/zone/hosts_reloader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/log.h"
#include "base/panic_guard.h"

namespace sb::dns {

namespace {

// The file's bytes, bounded by kMaxHostsFileBytes; `fd` is closed by the caller.
Result<std::string> read_bounded(int fd, const std::string& path) {
    std::string text;
    char buffer[65536];
    while (true) {
        ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0) {
            if (errno == EINTR) continue;
            return make_error(ErrorCode::kIo, "cannot read " + path, errno);
        }
        if (n == 0) return text;
        if (text.size() + static_cast<size_t>(n) > kMaxHostsFileBytes) {
            return make_error(ErrorCode::kInvalidArgument,
                              path + " is over " + std::to_string(kMaxHostsFileBytes) + " bytes");
        }
        text.append(buffer, static_cast<size_t>(n));
    }
}

}  // namespace

HostsReloader::HostsReloader(HostsOptions options, HostsHolder& holder)
    : options_(std::move(options)), holder_(holder) {}

HostsReloader::~HostsReloader() {
    stop();
}

void HostsReloader::start() {
    if (!poll()) {
        holder_.publish(HostsTable::build(options_, {}));  // the inline lines only
    }
    if (options_.file.empty() || options_.reload.count() == 0) return;
    thread_ = std::thread([this] { run(); });
}

void HostsReloader::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
}

void HostsReloader::run() {
    std::unique_lock lock(mutex_);
    while (!cv_.wait_for(lock, options_.reload, [this] { return stopping_; })) {
        lock.unlock();
        // Nothing may escape the thread: an exception (an allocation
        // failure) is a failed read, counted in coredns_panics_total; the last
        // good table stays and the next poll retries.
        run_guarded("dns hosts reload", [this] { poll(); });
        lock.lock();
    }
}

bool HostsReloader::poll() {
    if (options_.file.empty()) return false;
    const std::string& path = options_.file;
    auto fail = [&](const Error& error) {
        if (!failing_) {
            log::warn("dns: hosts: {}; serving the last good table until it can be read",
                      error.describe());
        }
        failing_ = true;
        last_ = Identity{};  // read again once it is back, even unchanged
        return false;
    };
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return fail(make_error(ErrorCode::kIo, "cannot open " + path, errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        int saved = errno;
        ::close(fd);
        return fail(make_error(ErrorCode::kIo, "cannot stat " + path, saved));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        return fail(make_error(ErrorCode::kInvalidArgument, path + " is not a regular file"));
    }
    Identity identity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                      static_cast<int64_t>(st.st_size),
                      static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
    if (identity == last_) {
        ::close(fd);
        return false;
    }
    auto text = read_bounded(fd, path);
    ::close(fd);
    if (!text) return fail(text.error());
    auto mappings = parse_hosts(*text, options_.zones);
    if (!mappings) {
        return fail(
            make_error(ErrorCode::kInvalidArgument, path + ": " + mappings.error().message));
    }
    auto table = HostsTable::build(options_, *mappings, identity.mtime_ns);
    log::info("dns: hosts: {} read: {} names and addresses", path, table->mapping_count());
    holder_.publish(std::move(table));
    last_ = identity;
    failing_ = false;
    return true;
}

}  // namespace sb::dns
