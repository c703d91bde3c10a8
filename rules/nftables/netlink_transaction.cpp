#include "rules/nftables/netlink_transaction.h"

#include <libnftnl/batch.h>
#include <libnftnl/common.h>
#include <linux/netfilter.h>
#include <linux/netlink.h>
#include <sys/uio.h>

#include <fmt/format.h>
#include <vector>

namespace sb::rules::nftables {

Batch::Batch(rules::NetlinkSocket& socket)
    : socket_(socket), first_seq_(socket.next_seq()), batch_(nftnl_batch_alloc(1 << 20, 1 << 16)) {
    nftnl_batch_begin(static_cast<char*>(nftnl_batch_buffer(batch_)), first_seq_);
    nftnl_batch_update(batch_);
}

Batch::~Batch() {
    nftnl_batch_free(batch_);
}

nlmsghdr* Batch::header(uint16_t type, uint16_t flags) {
    last_seq_ = socket_.next_seq();
    last_ = nftnl_nlmsg_build_hdr(static_cast<char*>(nftnl_batch_buffer(batch_)), type,
                                  NFPROTO_INET, flags, last_seq_);
    return last_;
}

void Batch::commit() {
    nftnl_batch_update(batch_);
    ++messages_;
}

void Batch::end() {
    end_seq_ = socket_.next_seq();
    nftnl_batch_end(static_cast<char*>(nftnl_batch_buffer(batch_)), end_seq_);
    nftnl_batch_update(batch_);
}

// The kernel processes the batch inside sendmsg(): errors (one per failed
// message) and the closing acknowledgement are queued when it returns.
Status send(Batch& b) {
    if (!b.last_) return {};
    // The last command asks for an acknowledgement: seeing it proves the
    // kernel processed the whole batch (failed messages answer anyway).
    b.last_->nlmsg_flags |= NLM_F_ACK;
    b.end();
    const int pages = nftnl_batch_iovec_len(b.batch_);
    std::vector<iovec> iov(static_cast<size_t>(pages));
    nftnl_batch_iovec(b.batch_, iov.data(), static_cast<uint32_t>(pages));
    auto answer = b.socket_.send_batch(iov, b.first_seq_, b.end_seq_, b.last_seq_);
    if (!answer) return answer.error();
    if (answer->error != 0) {
        return b.socket_.error(
            fmt::format("the kernel refused the batch of {} messages", b.messages()),
            answer->error);
    }
    if (!answer->acked) return b.socket_.error("the batch was not acknowledged", 0);
    return {};
}

}  // namespace sb::rules::nftables
