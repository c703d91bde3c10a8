#include "rules/kube_proxy_cleanup/netlink_socket.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include <algorithm>
#include <ctime>
#include <vector>

namespace sb::rules::kube_proxy_cleanup {

struct NetlinkSocket::Impl {
    mnl_socket* socket = nullptr;
    std::string name;
    uint32_t port_id = 0;
    uint32_t seq = 0;
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
    return make_error(ErrorCode::kKernel, impl_->name + ": " + what, err);
}

Result<NetlinkSocket> NetlinkSocket::open(int bus, std::string name) {
    auto impl = std::make_unique<Impl>();
    impl->name = std::move(name);
    impl->socket = mnl_socket_open(bus);
    if (!impl->socket) {
        return make_error(ErrorCode::kKernel, impl->name + ": open a netlink socket", errno);
    }
    if (mnl_socket_bind(impl->socket, 0, MNL_SOCKET_AUTOPID) < 0) {
        return make_error(ErrorCode::kKernel, impl->name + ": bind a netlink socket", errno);
    }
    impl->port_id = mnl_socket_get_portid(impl->socket);
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
    return ++impl_->seq;
}

Status NetlinkSocket::dump(const nlmsghdr* request, const std::string& what,
                           const std::function<void(const nlmsghdr*)>& on_reply) {
    if (mnl_socket_sendto(impl_->socket, request, request->nlmsg_len) < 0) {
        return error(what, errno);
    }
    for (;;) {
        const ssize_t n =
            mnl_socket_recvfrom(impl_->socket, impl_->reply.data(), impl_->reply.size());
        if (n < 0) return error(what, errno);
        const int r = mnl_cb_run(
            impl_->reply.data(), static_cast<size_t>(n), request->nlmsg_seq, impl_->port_id,
            [](const nlmsghdr* m, void* data) -> int {
                (*static_cast<const std::function<void(const nlmsghdr*)>*>(data))(m);
                return MNL_CB_OK;
            },
            const_cast<std::function<void(const nlmsghdr*)>*>(&on_reply));
        if (r == MNL_CB_STOP) return {};
        if (r < 0) {
            if (errno == ENOENT) return {};
            return error(what, errno);
        }
    }
}

Status NetlinkSocket::request(nlmsghdr* request) {
    request->nlmsg_flags |= NLM_F_ACK;
    if (mnl_socket_sendto(impl_->socket, request, request->nlmsg_len) < 0) {
        return error("send a request", errno);
    }
    const ssize_t n = mnl_socket_recvfrom(impl_->socket, impl_->reply.data(), impl_->reply.size());
    if (n < 0) return error("receive an answer", errno);
    if (mnl_cb_run(impl_->reply.data(), static_cast<size_t>(n), request->nlmsg_seq, impl_->port_id,
                   nullptr, nullptr) < 0) {
        return make_error(ErrorCode::kKernel, impl_->name, errno);
    }
    return {};
}

Result<NetlinkSocket::BatchAnswer> NetlinkSocket::send_batch(const char* bytes, size_t size,
                                                             uint32_t ack_seq) {
    const int fd = mnl_socket_get_fd(impl_->socket);
    int sndbuf = static_cast<int>(std::min<size_t>(size + (1 << 20), 1u << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    if (mnl_socket_sendto(impl_->socket, bytes, size) < 0) return error("send a batch", errno);
    BatchAnswer answer;
    for (;;) {
        const ssize_t n = recv(fd, impl_->reply.data(), impl_->reply.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return error("receive a batch's answers", errno);
        }
        int len = static_cast<int>(n);
        for (auto* m = reinterpret_cast<nlmsghdr*>(impl_->reply.data()); mnl_nlmsg_ok(m, len);
             m = mnl_nlmsg_next(m, &len)) {
            if (m->nlmsg_type != NLMSG_ERROR) continue;
            const auto* err = static_cast<const nlmsgerr*>(mnl_nlmsg_get_payload(m));
            if (err->error != 0 && answer.error == 0) {
                answer.error = -err->error;
                answer.failed_seq = m->nlmsg_seq;
            }
            if (err->error == 0 && m->nlmsg_seq == ack_seq) answer.acked = true;
        }
    }
    return answer;
}

}  // namespace sb::rules::kube_proxy_cleanup
