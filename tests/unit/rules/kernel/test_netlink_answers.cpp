// NetlinkAnswers (rules/kernel/netlink_answers.h) over hand-made answers: messages
// of other sequence numbers are skipped and counted, ours decide the result.
#include <linux/netlink.h>
#include <catch.hpp>

#include <cstring>
#include <vector>

#include "rules/kernel/netlink_answers.h"

using sb::rules::NetlinkAnswers;

namespace {

// Appends one message of `type` and `seq`; NLMSG_ERROR carries `error`.
void put(std::vector<char>& out, uint16_t type, uint32_t seq, int error = 0) {
    const size_t payload = type == NLMSG_ERROR ? sizeof(nlmsgerr) : 4;
    const size_t at = out.size();
    out.resize(at + NLMSG_SPACE(payload), 0);
    auto* m = reinterpret_cast<nlmsghdr*>(out.data() + at);
    m->nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(payload));
    m->nlmsg_type = type;
    m->nlmsg_seq = seq;
    if (type == NLMSG_ERROR) {
        nlmsgerr err{};
        err.error = error;
        err.msg.nlmsg_seq = seq;
        std::memcpy(NLMSG_DATA(m), &err, sizeof err);
    }
}

constexpr uint16_t kData = 0x10 + 1;  // any non-control type

}  // namespace

TEST_CASE("netlink answers: a stale refusal is skipped, the batch's ack decides") {
    std::vector<char> bytes;
    put(bytes, NLMSG_ERROR, 5, -ENOENT);  // left by an earlier request
    put(bytes, NLMSG_ERROR, 12, 0);       // the batch's last command
    NetlinkAnswers answers(10, 13, 12);
    answers.feed(bytes.data(), bytes.size());
    CHECK(answers.stale() == 1);
    CHECK(answers.error() == 0);
    CHECK(answers.acked());
    CHECK(answers.finished());
}

TEST_CASE("netlink answers: the first refusal of ours is kept with its sequence number") {
    std::vector<char> bytes;
    put(bytes, NLMSG_ERROR, 11, -EEXIST);
    put(bytes, NLMSG_ERROR, 12, -ENOENT);
    NetlinkAnswers answers(10, 13, 12);
    answers.feed(bytes.data(), bytes.size());
    CHECK(answers.error() == EEXIST);
    CHECK(answers.error_seq() == 11);
    CHECK_FALSE(answers.acked());
    CHECK(answers.stale() == 0);
}

TEST_CASE("netlink answers: a dump's data goes to the callback until NLMSG_DONE") {
    std::vector<char> bytes;
    put(bytes, kData, 6);  // the rest of an abandoned dump
    put(bytes, kData, 7);
    put(bytes, NLMSG_DONE, 6);
    put(bytes, kData, 7);
    NetlinkAnswers answers(7);
    int seen = 0;
    answers.feed(bytes.data(), bytes.size(), [&](const nlmsghdr* m) {
        CHECK(m->nlmsg_seq == 7);
        ++seen;
    });
    CHECK(seen == 2);
    CHECK(answers.stale() == 2);
    CHECK_FALSE(answers.finished());
    std::vector<char> done;
    put(done, NLMSG_DONE, 7);
    answers.feed(done.data(), done.size());
    CHECK(answers.finished());
    CHECK(answers.data_seen());
}

TEST_CASE("netlink answers: ranges may wrap around 2^32; truncated messages are ignored") {
    NetlinkAnswers answers(0xfffffffeu, 1, 1);
    CHECK(answers.ours(0xffffffffu));
    CHECK(answers.ours(0));
    CHECK(answers.ours(1));
    CHECK_FALSE(answers.ours(2));
    CHECK_FALSE(answers.ours(0xfffffffdu));
    std::vector<char> bytes;
    put(bytes, NLMSG_ERROR, 1, 0);
    answers.feed(bytes.data(), bytes.size() - 1);  // cut short: not a whole message
    CHECK_FALSE(answers.acked());
    answers.feed(bytes.data(), bytes.size());
    CHECK(answers.acked());
}
