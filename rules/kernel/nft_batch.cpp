#include "rules/kernel/nft_batch.h"

#include <libmnl/libmnl.h>
#include <libnftnl/batch.h>
#include <libnftnl/common.h>
#include <linux/netlink.h>
#include <sys/uio.h>

#include <vector>

#include <fmt/format.h>

namespace sb::rules {

NftBatch::NftBatch() : batch_(nftnl_batch_alloc(1 << 20, 1 << 16)) {
    // BEGIN's number is set in send(), with the others.
    nftnl_batch_begin(static_cast<char*>(nftnl_batch_buffer(batch_)), 0);
    nftnl_batch_update(batch_);
}

NftBatch::~NftBatch() {
    nftnl_batch_free(batch_);
}

nlmsghdr* NftBatch::header(uint16_t type, uint16_t family, uint16_t flags) {
    return nftnl_nlmsg_build_hdr(static_cast<char*>(nftnl_batch_buffer(batch_)), type, family,
                                 flags, 0);
}

void NftBatch::commit(std::string what) {
    // A message that does not fit its page moves to a new one here, so no
    // pointer into the pages is kept: send() numbers the messages in place.
    nftnl_batch_update(batch_);
    ++messages_;
    if (!what.empty()) what_.emplace(messages_, std::move(what));
}

void NftBatch::add(uint16_t type, uint16_t family, std::string what, const FillMessage& fill) {
    fill(header(type, family, 0));
    commit(std::move(what));
}

// The kernel processes the batch inside sendmsg(): errors (one per failed
// message) and the closing acknowledgement are queued when it returns.
Status send(NetlinkSocket& socket, NftBatch& b) {
    if (b.empty()) return {};
    // Numbers of the socket's own, unique per batch, so answers left by an
    // earlier request are told apart: BEGIN takes base, message k (1..last)
    // base + k, END base + last + 1.
    const auto last = static_cast<uint32_t>(b.messages_);
    const uint32_t base = socket.next_seqs(last + 2);
    nftnl_batch_end(static_cast<char*>(nftnl_batch_buffer(b.batch_)), base + last + 1);
    nftnl_batch_update(b.batch_);
    const int pages = nftnl_batch_iovec_len(b.batch_);
    std::vector<iovec> iov(static_cast<size_t>(pages));
    nftnl_batch_iovec(b.batch_, iov.data(), static_cast<uint32_t>(pages));
    uint32_t k = 0;  // BEGIN is 0, END last + 1
    for (const iovec& page : iov) {
        int left = static_cast<int>(page.iov_len);
        for (auto* nlh = static_cast<nlmsghdr*>(page.iov_base); mnl_nlmsg_ok(nlh, left);
             nlh = mnl_nlmsg_next(nlh, &left), ++k) {
            if (k <= last) nlh->nlmsg_seq = base + k;
            // Only the last command asks for an acknowledgement: seeing it
            // proves the kernel processed the whole batch (a refused
            // message answers anyway, with its error).
            if (k == last) nlh->nlmsg_flags |= NLM_F_ACK;
        }
    }
    auto answer = socket.send_batch(iov, base, base + last + 1, base + last);
    if (!answer) return answer.error();
    if (answer->error != 0) {
        const auto named = b.what_.find(answer->failed_seq - base);
        if (named == b.what_.end()) {
            return socket.error(fmt::format("the kernel refused the batch of {} messages", last),
                                answer->error);
        }
        return socket.error(
            fmt::format("{} (one of {} changes, none applied)", named->second, last),
            answer->error);
    }
    if (!answer->acked) return socket.error("the batch was not acknowledged", 0);
    return {};
}

}  // namespace sb::rules
