#include "base/file_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <functional>

#include "base/file_text.h"

namespace sb {

namespace {

// The identity of a regular file open as `fd`.
Result<FileIdentity> identity_of(int fd, const std::string& path) {
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        return make_error(ErrorCode::kIo, fmt::format("cannot stat {}", path), errno);
    }
    if (!S_ISREG(st.st_mode)) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{} is not a regular file", path));
    }
    return FileIdentity{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                        static_cast<int64_t>(st.st_size),
                        static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

}  // namespace

Result<FileWatch::Look> FileWatch::look(const std::string& path, size_t max_bytes) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        forget();
        return make_error(ErrorCode::kIo, fmt::format("cannot open {}", path), errno);
    }
    Look look;
    Status status = [&]() -> Status {
        auto identity = identity_of(fd, path);
        if (!identity) return identity.error();
        look.identity = *identity;
        look.changed = see(Fingerprint{look.identity, std::nullopt});
        if (!look.changed) return {};
        auto content = read_open_file(fd, path, max_bytes);
        if (!content) return content.error();
        look.content = std::move(*content);
        return {};
    }();
    ::close(fd);
    if (!status) {
        forget();
        return status.error();
    }
    return look;
}

bool FileWatch::changed(std::string_view content) {
    return see(Fingerprint{std::nullopt, std::hash<std::string_view>()(content)});
}

void FileWatch::forget() {
    last_.reset();
}

bool FileWatch::see(const Fingerprint& now) {
    const bool changed = last_ != now;
    last_ = now;
    return changed;
}

}  // namespace sb
