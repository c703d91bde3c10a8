#include "dns/forward/upstream_reply.h"

namespace sb::dns {

const char* reason_label(ReplyVerdict verdict) {
    switch (verdict) {
        case ReplyVerdict::kAccepted:
            return "accepted";
        case ReplyVerdict::kMalformed:
            return "malformed";
        case ReplyVerdict::kNotAResponse:
            return "not_a_response";
        case ReplyVerdict::kId:
            return "id";
        case ReplyVerdict::kQuestion:
            return "question";
    }
    return "malformed";
}

ReplyVerdict check_upstream_reply(const Message& reply, const ExpectedReply& expected) {
    if (!reply.header.qr) return ReplyVerdict::kNotAResponse;
    if (reply.header.id != expected.id) return ReplyVerdict::kId;
    if (reply.questions.size() != 1) return ReplyVerdict::kQuestion;
    const Question& question = reply.questions[0];
    if (question.qtype != expected.qtype || question.qclass != expected.qclass ||
        name_lower(question.name) != expected.lower_name) {
        return ReplyVerdict::kQuestion;
    }
    return ReplyVerdict::kAccepted;
}

CheckedReply check_upstream_reply(std::span<const uint8_t> packet, const ExpectedReply& expected) {
    CheckedReply checked;
    auto parsed = parse_message(packet);
    if (!parsed) return checked;
    checked.verdict = check_upstream_reply(*parsed, expected);
    if (checked.verdict == ReplyVerdict::kAccepted) checked.message = std::move(*parsed);
    return checked;
}

}  // namespace sb::dns
