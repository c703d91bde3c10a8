#include "base/file_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <limits>

namespace sb {

Result<std::string> read_open_file(int fd, const std::string& path, size_t max_bytes) {
    std::string text;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
        text.reserve(std::min(static_cast<size_t>(st.st_size), max_bytes));
    }
    char buffer[65536];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof(buffer));
        if (n < 0) {
            if (errno == EINTR) continue;
            return make_error(ErrorCode::kIo, fmt::format("cannot read {}", path), errno);
        }
        if (n == 0) return text;
        if (text.size() + static_cast<size_t>(n) > max_bytes) {
            return make_error(ErrorCode::kInvalidArgument,
                              fmt::format("{} is over {} bytes", path, max_bytes));
        }
        text.append(buffer, static_cast<size_t>(n));
    }
}

int write_whole(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        bytes.remove_prefix(static_cast<size_t>(n));
    }
    return 0;
}

Result<std::string> read_file_text(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error(ErrorCode::kIo, fmt::format("cannot read {}", path), errno);
    auto text = read_open_file(fd, path, std::numeric_limits<size_t>::max());
    ::close(fd);
    return text;
}

}  // namespace sb
