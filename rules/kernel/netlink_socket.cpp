#include "rules/kernel/netlink_socket.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <ctime>
#include <vector>

#include <fmt/format.h>

#include "base/log.h"
#include "rules/kernel/netlink_answers.h"

namespace sb::rules {

struct NetlinkSocket::Impl {
    mnl_socket* socket = nullptr;
    std::string name;
    uint32_t seq = 0;
    size_t stale = 0;
    std::vector<char> reply = std::vector<char>(MNL_SOCKET_BUFFER_SIZE * 4);
    ~Impl() {
        if (socket) mnl_socket_close(socket);
    }
};

NetlinkSocket::NetlinkSocket(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NetlinkSocket::NetlinkSocket(NetlinkSocket&&) noexcept = default;
NetlinkSocket& NetlinkSocket::operator=(NetlinkSocket&&) noexcept = default;
NetlinkSocket::~NetlinkSocket() = default;

Error NetlinkSocket::error(const std::string& what, int err) const {
    return make_error(ErrorCode::kKernel, fmt::format("{}: {}", impl_->name, what), err);
}

Result<NetlinkSocket> NetlinkSocket::open(int bus, std::string name) {
    auto impl = std::make_unique<Impl>();
    impl->name = std::move(name);
    impl->socket = mnl_socket_open(bus);
    if (!impl->socket) {
        return make_error(ErrorCode::kKernel, fmt::format("{}: open a netlink socket", impl->name),
                          errno);
    }
    if (mnl_socket_bind(impl->socket, 0, MNL_SOCKET_AUTOPID) < 0) {
        return make_error(ErrorCode::kKernel, fmt::format("{}: bind a netlink socket", impl->name),
                          errno);
    }
    impl->seq = static_cast<uint32_t>(time(nullptr));
    const int fd = mnl_socket_get_fd(impl->socket);
    // Dumps of a big cluster's rules, and one error per refused message.
    int rcvbuf = 8 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    timeval timeout{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    return NetlinkSocket(std::move(impl));
}

uint32_t NetlinkSocket::next_seq() {
    return next_seqs(1);
}

uint32_t NetlinkSocket::next_seqs(uint32_t count) {
    const uint32_t first = impl_->seq + 1;
    impl_->seq += count;
    return first;
}

size_t NetlinkSocket::stale_answers() const {
    return impl_->stale;
}

void NetlinkSocket::note_stale(size_t stale) {
    impl_->stale += stale;
    if (stale > 0) {
        log::warn("{}: skipped {} netlink answers of an earlier request", impl_->name, stale);
    }
}

Status NetlinkSocket::query(const nlmsghdr* request, const std::string& what,
                            const std::function<void(const nlmsghdr*)>& on_reply) {
    if (mnl_socket_sendto(impl_->socket, request, request->nlmsg_len) < 0) {
        return error(what, errno);
    }
    // A get without NLM_F_ACK is answered by its data alone: no DONE follows.
    const bool dump = (request->nlmsg_flags & NLM_F_DUMP) != 0;
    NetlinkAnswers answers(request->nlmsg_seq);
    while (!answers.finished() && (dump || !answers.data_seen())) {
        const ssize_t n =
            mnl_socket_recvfrom(impl_->socket, impl_->reply.data(), impl_->reply.size());
        if (n < 0) return error(what, errno);
        answers.feed(impl_->reply.data(), static_cast<size_t>(n), on_reply);
    }
    note_stale(answers.stale());
    if (answers.error() == ENOENT) {
        return make_error(ErrorCode::kNotFound, fmt::format("{}: {}", impl_->name, what), ENOENT);
    }
    if (answers.error() != 0) return error(what, answers.error());
    return {};
}

Status NetlinkSocket::dump(const nlmsghdr* request, const std::string& what,
                           const std::function<void(const nlmsghdr*)>& on_reply) {
    Status listed = query(request, what, on_reply);
    if (!listed && listed.error().code == ErrorCode::kNotFound) return {};
    return listed;
}

Status NetlinkSocket::request(nlmsghdr* request) {
    request->nlmsg_flags |= NLM_F_ACK;
    if (mnl_socket_sendto(impl_->socket, request, request->nlmsg_len) < 0) {
        return error("send a request", errno);
    }
    NetlinkAnswers answers(request->nlmsg_seq);
    while (!answers.finished()) {
        const ssize_t n =
            mnl_socket_recvfrom(impl_->socket, impl_->reply.data(), impl_->reply.size());
        if (n < 0) return error("receive an answer", errno);
        answers.feed(impl_->reply.data(), static_cast<size_t>(n));
    }
    note_stale(answers.stale());
    if (answers.error() != 0) return make_error(ErrorCode::kKernel, impl_->name, answers.error());
    return {};
}

Result<NetlinkSocket::BatchAnswer> NetlinkSocket::send_batch(std::span<const iovec> pages,
                                                             uint32_t first_seq, uint32_t last_seq,
                                                             uint32_t ack_seq) {
    size_t total = 0;
    for (const iovec& page : pages) total += page.iov_len;
    const int fd = mnl_socket_get_fd(impl_->socket);
    int sndbuf = static_cast<int>(std::min<size_t>(total + (1 << 20), 1u << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    msghdr msg{};
    msg.msg_name = &kernel;
    msg.msg_namelen = sizeof kernel;
    msg.msg_iov = const_cast<iovec*>(pages.data());  // sendmsg() only reads it
    msg.msg_iovlen = pages.size();
    if (sendmsg(fd, &msg, 0) < 0) return error("send a batch", errno);
    NetlinkAnswers answers(first_seq, last_seq, ack_seq);
    for (;;) {
        const ssize_t n = recv(fd, impl_->reply.data(), impl_->reply.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return error("receive a batch's answers", errno);
        }
        answers.feed(impl_->reply.data(), static_cast<size_t>(n));
    }
    note_stale(answers.stale());
    BatchAnswer answer;
    answer.error = answers.error();
    answer.failed_seq = answers.error_seq();
    answer.acked = answers.acked();
    return answer;
}

}  // namespace sb::rules
