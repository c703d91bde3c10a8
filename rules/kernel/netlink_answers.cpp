#include "rules/kernel/netlink_answers.h"

#include <linux/netlink.h>

#include <cstring>

namespace sb::rules {

namespace {

// The next whole message of `size` bytes at `at`, or nullptr.
const nlmsghdr* whole_message(const char* at, size_t size) {
    if (size < sizeof(nlmsghdr)) return nullptr;
    const auto* m = reinterpret_cast<const nlmsghdr*>(at);
    if (m->nlmsg_len < sizeof(nlmsghdr) || m->nlmsg_len > size) return nullptr;
    return m;
}

}  // namespace

NetlinkAnswers::NetlinkAnswers(uint32_t first_seq, uint32_t last_seq, uint32_t ack_seq)
    : first_seq_(first_seq), last_seq_(last_seq), ack_seq_(ack_seq) {}

bool NetlinkAnswers::ours(uint32_t seq) const {
    // Unsigned differences: a range that wraps around 2^32 still holds.
    return seq - first_seq_ <= last_seq_ - first_seq_;
}

void NetlinkAnswers::feed(const void* bytes, size_t size,
                          const std::function<void(const nlmsghdr*)>& on_data) {
    const char* at = static_cast<const char*>(bytes);
    size_t offset = 0;
    while (const nlmsghdr* m = whole_message(at + offset, size - offset)) {
        offset += NLMSG_ALIGN(m->nlmsg_len);
        if (!ours(m->nlmsg_seq)) {
            ++stale_;
        } else if (m->nlmsg_type == NLMSG_ERROR) {
            nlmsgerr err{};
            if (m->nlmsg_len >= NLMSG_LENGTH(sizeof(int))) {
                std::memcpy(&err.error, NLMSG_DATA(m), sizeof(int));
            }
            if (err.error != 0) {
                if (error_ == 0) {
                    error_ = -err.error;
                    error_seq_ = m->nlmsg_seq;
                }
                finished_ = true;
            } else if (m->nlmsg_seq == ack_seq_) {
                acked_ = true;
                finished_ = true;
            }
        } else if (m->nlmsg_type == NLMSG_DONE) {
            finished_ = true;
        } else if (m->nlmsg_type != NLMSG_NOOP) {
            data_seen_ = true;
            if (on_data) on_data(m);
        }
        if (offset >= size) break;
    }
}

}  // namespace sb::rules
