#include "rules/nftables/netlink_socket.h"

#include <errno.h>
#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/common.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <fmt/format.h>
#include <algorithm>
#include <ctime>
#include <vector>

#include "base/log.h"
#include "rules/netlink_answers.h"

namespace sb::rules::nftables {

Error kernel_error(std::string what, int err) {
    return make_error(ErrorCode::kKernel, std::move(what), err);
}

Batch::Batch(uint32_t first_seq)
    : first_seq_(first_seq), seq_(first_seq), batch_(nftnl_batch_alloc(1 << 20, 1 << 16)) {
    nftnl_batch_begin(static_cast<char*>(nftnl_batch_buffer(batch_)), seq_++);
    nftnl_batch_update(batch_);
}

Batch::~Batch() {
    nftnl_batch_free(batch_);
}

nlmsghdr* Batch::header(uint16_t type, uint16_t flags) {
    last_seq_ = seq_;
    last_ = nftnl_nlmsg_build_hdr(static_cast<char*>(nftnl_batch_buffer(batch_)), type,
                                  NFPROTO_INET, flags, seq_++);
    return last_;
}

void Batch::commit() {
    nftnl_batch_update(batch_);
    ++messages_;
}

void Batch::end() {
    nftnl_batch_end(static_cast<char*>(nftnl_batch_buffer(batch_)), seq_++);
    nftnl_batch_update(batch_);
}

NetlinkConnection::NetlinkConnection(mnl_socket* socket)
    : socket_(socket), seq_(static_cast<uint32_t>(time(nullptr))) {}

NetlinkConnection::~NetlinkConnection() {
    mnl_socket_close(socket_);
}

Result<std::unique_ptr<NetlinkConnection>> NetlinkConnection::open() {
    mnl_socket* socket = mnl_socket_open(NETLINK_NETFILTER);
    if (!socket) return kernel_error("nftables: open netlink socket", errno);
    std::unique_ptr<NetlinkConnection> c(new NetlinkConnection(socket));
    if (mnl_socket_bind(socket, 0, MNL_SOCKET_AUTOPID) < 0) {
        return kernel_error("nftables: bind netlink socket", errno);
    }
    // Replies to big dumps and error lists for big batches.
    int rcvbuf = 8 << 20;
    setsockopt(mnl_socket_get_fd(socket), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf);
    // A kernel that never answers must not hang the sync loop.
    timeval timeout{5, 0};
    setsockopt(mnl_socket_get_fd(socket), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    return c;
}

void NetlinkConnection::note_stale(size_t stale) {
    stale_ += stale;
    if (stale > 0) log::warn("nftables: skipped {} netlink answers of an earlier request", stale);
}

Status NetlinkConnection::talk(nlmsghdr* nlh,
                               const std::function<void(const nlmsghdr*)>& on_message) {
    if (mnl_socket_sendto(socket_, nlh, nlh->nlmsg_len) < 0) {
        return kernel_error("nftables: netlink send", errno);
    }
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
    const bool dump = (nlh->nlmsg_flags & NLM_F_DUMP) != 0;
    NetlinkAnswers answers(nlh->nlmsg_seq);
    while (!answers.finished() && (dump || !answers.data_seen())) {
        const ssize_t n = mnl_socket_recvfrom(socket_, buf.data(), buf.size());
        if (n < 0) return kernel_error("nftables: netlink receive", errno);
        answers.feed(buf.data(), static_cast<size_t>(n), on_message);
    }
    note_stale(answers.stale());
    if (answers.error() == ENOENT) return make_error(ErrorCode::kNotFound, "nftables: not found");
    if (answers.error() != 0) return kernel_error("nftables: netlink request", answers.error());
    return {};
}

// The kernel processes the batch inside sendmsg(): errors (one per failed
// message) and the closing acknowledgement are queued when it returns.
Status NetlinkConnection::send(Batch& b) {
    if (!b.last_) return {};
    // The last command asks for an acknowledgement: seeing it proves the
    // kernel processed the whole batch (failed messages answer anyway).
    b.last_->nlmsg_flags |= NLM_F_ACK;
    const uint32_t ack_seq = b.last_seq_;
    b.end();

    const int pages = nftnl_batch_iovec_len(b.batch_);
    std::vector<iovec> iov(static_cast<size_t>(pages));
    nftnl_batch_iovec(b.batch_, iov.data(), static_cast<uint32_t>(pages));
    size_t total = 0;
    for (const iovec& v : iov) total += v.iov_len;
    const int fd = mnl_socket_get_fd(socket_);
    int sndbuf = static_cast<int>(std::min<size_t>(total + (1 << 20), 1u << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof sndbuf);
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    msghdr msg{};
    msg.msg_name = &kernel;
    msg.msg_namelen = sizeof kernel;
    msg.msg_iov = iov.data();
    msg.msg_iovlen = iov.size();
    if (sendmsg(fd, &msg, 0) < 0) return kernel_error("nftables: send batch", errno);

    // Begin .. end, both included.
    NetlinkAnswers answers(b.first_seq_, b.seq_ - 1, ack_seq);
    seq_ = b.seq_;
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE * 4);
    for (;;) {
        const ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            if (errno == EINTR) continue;
            return kernel_error("nftables: receive batch result", errno);
        }
        answers.feed(buf.data(), static_cast<size_t>(n));
    }
    note_stale(answers.stale());
    if (answers.error() != 0) {
        return kernel_error(
            fmt::format("nftables: the kernel refused the batch of {} messages", b.messages()),
            answers.error());
    }
    if (!answers.acked()) {
        return make_error(ErrorCode::kKernel, "nftables: the batch was not acknowledged");
    }
    return {};
}

}  // namespace sb::rules::nftables
