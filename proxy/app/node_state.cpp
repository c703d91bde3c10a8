#include "proxy/app/node_state.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "base/file_text.h"
#include "base/text.h"

namespace sb::proxy {

namespace {

#ifndef SO_NETNS_COOKIE
constexpr int SO_NETNS_COOKIE = 71;  // linux/socket.h, since Linux 5.14
#endif

std::string folder_of(const std::string& state_dir, uint64_t cookie) {
    return fmt::format("{}/netns-{}", state_dir, cookie);
}

}  // namespace

Result<uint64_t> network_namespace_cookie() {
    int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return make_error(ErrorCode::kIo, "socket for the network namespace cookie", errno);
    uint64_t cookie = 0;
    socklen_t length = sizeof(cookie);
    int rc = ::getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &length);
    int saved = errno;
    ::close(fd);
    if (rc != 0) return make_error(ErrorCode::kIo, "SO_NETNS_COOKIE", saved);
    return cookie;
}

Result<NodeState> open_node_state(const std::string& state_dir) {
    auto cookie = network_namespace_cookie();
    if (!cookie) return cookie.error();
    auto boot_id = read_file_text("/proc/sys/kernel/random/boot_id");
    if (!boot_id) return boot_id.error();
    std::string folder = folder_of(state_dir, *cookie);
    std::error_code ec;
    std::filesystem::create_directories(folder, ec);
    if (ec) {
        return make_error(ErrorCode::kIo, fmt::format("{}: {}", folder, ec.message()));
    }
    std::filesystem::permissions(folder, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
    if (ec) return make_error(ErrorCode::kIo, fmt::format("{}: {}", folder, ec.message()));
    return NodeState{folder, fmt::format("boot {} netns {}", trim(*boot_id), *cookie)};
}

Status remove_node_state_folder(const std::string& state_dir) {
    auto cookie = network_namespace_cookie();
    if (!cookie) return cookie.error();
    std::string folder = folder_of(state_dir, *cookie);
    std::error_code ec;
    std::filesystem::remove_all(folder, ec);
    if (ec) return make_error(ErrorCode::kIo, fmt::format("{}: {}", folder, ec.message()));
    if (std::filesystem::is_empty(state_dir, ec) && !ec) std::filesystem::remove(state_dir, ec);
    return {};
}

}  // namespace sb::proxy
