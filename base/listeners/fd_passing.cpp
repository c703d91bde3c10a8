#include "base/listeners/fd_passing.h"

#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace sb::listeners {

namespace {

// The largest message: the kind, then a name and its newline per socket.
constexpr size_t kMaxPayload = 16 + kMaxPassedFds * (kMaxFdNameLength + 1);
constexpr std::string_view kMagic = "sbfd1 ";

bool valid_kind(std::string_view kind) {
    if (kind.empty() || kind.size() > 16) return false;
    for (char c : kind) {
        if (c < 'a' || c > 'z') return false;
    }
    return true;
}

Result<size_t> parse_count(std::string_view text, const char* what) {
    size_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
        return make_error(ErrorCode::kInvalidArgument, fmt::format("{}: not a number", what));
    }
    return value;
}

void close_all(const std::vector<NamedFd>& fds) {
    for (const auto& named : fds) ::close(named.fd);
}

}  // namespace

bool valid_fd_name(std::string_view name) {
    if (name.empty() || name.size() > kMaxFdNameLength) return false;
    for (char c : name) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        if (!ok) return false;
    }
    return true;
}

Result<std::vector<std::string>> parse_listen_fds(std::string_view listen_pid,
                                                  std::string_view listen_fds,
                                                  std::string_view listen_fdnames, pid_t own_pid) {
    auto pid = parse_count(listen_pid, "LISTEN_PID");
    if (!pid) return pid.error();
    if (*pid != static_cast<size_t>(own_pid)) return std::vector<std::string>{};
    auto count = parse_count(listen_fds, "LISTEN_FDS");
    if (!count) return count.error();
    if (*count > kMaxPassedFds) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("LISTEN_FDS: {} sockets, at most {}", *count, kMaxPassedFds));
    }
    std::vector<std::string> names;
    if (listen_fdnames.empty()) {
        names.assign(*count, "unknown");
        return names;
    }
    size_t start = 0;
    while (names.size() <= kMaxPassedFds) {
        const size_t end = listen_fdnames.find(':', start);
        std::string_view name = listen_fdnames.substr(start, end - start);
        if (!valid_fd_name(name)) {
            return make_error(ErrorCode::kInvalidArgument,
                              "LISTEN_FDNAMES: a name is not 1-32 "
                              "of [A-Za-z0-9._-]");
        }
        names.emplace_back(name);
        if (end == std::string_view::npos) break;
        start = end + 1;
    }
    if (names.size() != *count) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("LISTEN_FDNAMES: not {} names", *count));
    }
    return names;
}

std::string encode_fd_message(std::string_view kind, const std::vector<std::string>& names) {
    std::string out(kMagic);
    out += kind;
    for (const auto& name : names) {
        out += '\n';
        out += name;
    }
    return out;
}

Result<FdMessage> decode_fd_message(std::string_view payload, size_t fd_count) {
    auto fail = [](std::string_view why) {
        return make_error(ErrorCode::kInvalidArgument, fmt::format("socket message: {}", why));
    };
    if (payload.size() > kMaxPayload) return fail("too long");
    // The count comes from the same process as the payload (the fds it
    // attached): more than kMaxPassedFds is refused before any name is read.
    if (fd_count > kMaxPassedFds) {
        return fail(fmt::format("{} sockets, more than {}", fd_count, kMaxPassedFds));
    }
    if (payload.substr(0, kMagic.size()) != kMagic) return fail("not a switchboard message");
    payload.remove_prefix(kMagic.size());
    FdMessage message;
    size_t end = payload.find('\n');
    message.kind = std::string(payload.substr(0, end));
    if (!valid_kind(message.kind)) return fail("bad kind");
    while (end != std::string_view::npos) {
        if (message.names.size() == fd_count) return fail("more names than sockets");
        const size_t start = end + 1;
        end = payload.find('\n', start);
        std::string_view name = payload.substr(start, end - start);
        if (!valid_fd_name(name)) return fail("a name is not 1-32 of [A-Za-z0-9._-]");
        message.names.emplace_back(name);
    }
    if (message.names.size() != fd_count) return fail("fewer names than sockets");
    return message;
}

Status send_fds(int channel, std::string_view kind, const std::vector<NamedFd>& fds) {
    if (fds.size() > kMaxPassedFds) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{} sockets to pass, at most {}", fds.size(), kMaxPassedFds));
    }
    std::vector<std::string> names;
    for (const auto& named : fds) names.push_back(named.name);
    std::string payload = encode_fd_message(kind, names);
    iovec iov{payload.data(), payload.size()};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    if (!fds.empty()) {
        message.msg_control = control;
        message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        for (size_t i = 0; i < fds.size(); ++i) {
            std::memcpy(CMSG_DATA(header) + i * sizeof(int), &fds[i].fd, sizeof(int));
        }
    }
    if (::sendmsg(channel, &message, MSG_NOSIGNAL) < 0) {
        return make_error(ErrorCode::kIo, "passing sockets", errno);
    }
    return {};
}

Result<ReceivedFds> receive_fds(int channel) {
    std::string payload(kMaxPayload + 1, '\0');
    iovec iov{payload.data(), payload.size()};
    msghdr message{};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    const ssize_t received = ::recvmsg(channel, &message, MSG_CMSG_CLOEXEC);
    if (received < 0) return make_error(ErrorCode::kIo, "receiving sockets", errno);
    ReceivedFds out;
    for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
         header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        const size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
            int fd = -1;
            std::memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
            out.fds.push_back(NamedFd{fd, {}});
        }
    }
    auto fail = [&](Error error) {
        close_all(out.fds);
        return error;
    };
    if (received == 0) return fail(make_error(ErrorCode::kUnavailable, "socket channel closed"));
    if ((message.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
        return fail(make_error(ErrorCode::kInvalidArgument, "socket message: truncated"));
    }
    payload.resize(static_cast<size_t>(received));
    auto decoded = decode_fd_message(payload, out.fds.size());
    if (!decoded) return fail(decoded.error());
    out.kind = std::move(decoded->kind);
    for (size_t i = 0; i < out.fds.size(); ++i) out.fds[i].name = std::move(decoded->names[i]);
    return out;
}

}  // namespace sb::listeners
