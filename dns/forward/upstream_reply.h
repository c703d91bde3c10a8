// Which upstream replies the forwarder accepts (issue 10): a pure check of
// the bytes that came back on a query's own socket, so that an off-path
// sender must guess the source port, the 16-bit ID and the question, and
// a query (QR=0) can never pass for an answer. The source address and port
// are the kernel's to check: each query has its own connected socket.
//
// Thread safety: free functions, no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "dns/wire/wire.h"

namespace sb::dns {

// What the reply must echo: the ID we sent and our question.
struct ExpectedReply {
    uint16_t id = 0;
    std::string_view lower_name;  // wire form, lower-case
    uint16_t qtype = 0;
    uint16_t qclass = kClassIN;
};

// Accepted, or why not; the values index the drop counter's reasons.
enum class ReplyVerdict : uint8_t {
    kAccepted,
    kMalformed,     // does not parse
    kNotAResponse,  // QR=0
    kId,            // another ID
    kQuestion,      // not exactly our question (name compared case-insensitively)
};
inline constexpr size_t kReplyVerdicts = 5;
// The metric's reason label: "accepted", "malformed", "not_a_response", "id", "question".
const char* reason_label(ReplyVerdict verdict);

ReplyVerdict check_upstream_reply(const Message& reply, const ExpectedReply& expected);

struct CheckedReply {
    ReplyVerdict verdict = ReplyVerdict::kMalformed;
    std::optional<Message> message;  // set when accepted
};
CheckedReply check_upstream_reply(std::span<const uint8_t> packet, const ExpectedReply& expected);

}  // namespace sb::dns
