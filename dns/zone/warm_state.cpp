#include "dns/zone/warm_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <string_view>

#include "base/file_text.h"

namespace sb::dns {

namespace {

// Thrown by the sink of a background write that gives way (caught below).
struct GaveWay {};

// Writes `zone`'s state to the new file `path` (mode 0600), piece by piece
// as the codec makes them (Zone::write_state). With `before_piece`, calls it
// before each piece and stops as soon as `give_way` is above zero: false
// then, and the caller removes the file.
Result<bool> write_new_file(const std::string& path, const Zone& zone, const std::string& identity,
                            const std::function<void()>* before_piece,
                            const std::atomic<int>& give_way) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return make_error(ErrorCode::kIo, fmt::format("cannot create {}", path), errno);
    int failed = 0;  // the errno of the first write that failed
    bool gave_way = false;
    auto giving_way = [&give_way] { return give_way.load(std::memory_order_relaxed) > 0; };
    try {
        zone.write_state(identity, [&](std::string_view piece) {
            if (before_piece) {
                if (giving_way()) throw GaveWay{};
                (*before_piece)();
                if (giving_way()) throw GaveWay{};
            }
            if (failed == 0) failed = write_whole(fd, piece);
        });
    } catch (const GaveWay&) {
        gave_way = true;
    }
    if (::close(fd) != 0 && failed == 0) failed = errno;
    if (gave_way) return false;
    if (failed != 0)
        return make_error(ErrorCode::kIo, fmt::format("cannot write {}", path), failed);
    return true;
}

}  // namespace

WarmStateFile::WarmStateFile(std::string path, std::string identity)
    : path_(std::move(path)), identity_(std::move(identity)) {}

Result<std::shared_ptr<const Zone>> WarmStateFile::load(const ZoneConfig& config) const {
    int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int saved = errno;
        if (saved == ENOENT) return make_error(ErrorCode::kNotFound, path_ + ": no state");
        return make_error(ErrorCode::kIo, fmt::format("cannot open {}", path_), saved);
    }
    auto bytes = read_open_file(fd, path_, Zone::kMaxStateBytes);
    ::close(fd);
    if (!bytes) return bytes.error();
    auto zone = Zone::from_state_bytes(*bytes, config, identity_);
    if (!zone) {
        return make_error(zone.error().code, fmt::format("{}: {}", path_, zone.error().message));
    }
    return zone;
}

Status WarmStateFile::write(const std::shared_ptr<const Zone>& zone) {
    writes_waiting_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock lock(write_mutex_);
    writes_waiting_.fetch_sub(1, std::memory_order_relaxed);
    auto written = write_locked(zone, nullptr);
    if (!written) return written.error();
    return {};
}

Result<bool> WarmStateFile::write_in_background(const std::shared_ptr<const Zone>& zone,
                                                const std::function<void()>& before_piece) {
    std::lock_guard lock(write_mutex_);
    return write_locked(zone, &before_piece);
}

Result<bool> WarmStateFile::write_locked(const std::shared_ptr<const Zone>& zone,
                                         const std::function<void()>* before_piece) {
    if (written_.lock() == zone) return true;
    const std::string temporary = path_ + ".tmp";
    auto written = write_new_file(temporary, *zone, identity_, before_piece, writes_waiting_);
    if (written && *written && ::rename(temporary.c_str(), path_.c_str()) != 0) {
        written = make_error(ErrorCode::kIo,
                             fmt::format("cannot rename {} to {}", temporary, path_), errno);
    }
    if (!written || !*written) {
        ::unlink(temporary.c_str());
        if (!written) write_failures_.fetch_add(1, std::memory_order_relaxed);
        return written;
    }
    written_ = zone;
    writes_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

}  // namespace sb::dns
