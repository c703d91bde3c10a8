// libFuzzer target: the forwarder's handling of upstream bytes (issue 10
// point 9): the reply check (upstream_reply.h) against our query, then, for
// an accepted reply, the client's reply built from it as the server builds
// one (the query's reply_basis, the upstream's sections, finish_reply).
// Invariants checked: nothing crashes or reads out of bounds (ASan/UBSan);
// an accepted reply has QR=1, our ID and our question; the client's reply
// written fits its limit and parses again with the client's ID.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "dns/forward/upstream_reply.h"
#include "dns/wire/wire.h"
#include "dns/zone/resolver.h"

namespace {

using namespace sb;

constexpr uint16_t kUpstreamId = 0x5eed;

const dns::Message& client_query() {
    static const dns::Message query = [] {
        dns::Message m;
        m.header.id = 0x0c1d;
        m.header.rd = true;
        m.questions.push_back(
            {*dns::name_from_text("www.Example.com"), dns::type::kA, dns::kClassIN});
        m.edns = dns::Edns{};
        m.edns->udp_size = 4096;
        return m;
    }();
    return query;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const dns::Message& query = client_query();
    static const std::string lower = dns::name_lower(query.questions[0].name);
    const dns::ExpectedReply expected{kUpstreamId, lower, dns::type::kA, dns::kClassIN};
    dns::CheckedReply checked = dns::check_upstream_reply(std::span(data, size), expected);
    if (checked.verdict != dns::ReplyVerdict::kAccepted) {
        if (checked.message) std::abort();
        return 0;
    }
    if (!checked.message) std::abort();
    const dns::Message& upstream = *checked.message;
    if (!upstream.header.qr || upstream.header.id != kUpstreamId ||
        upstream.questions.size() != 1 || dns::name_lower(upstream.questions[0].name) != lower) {
        std::abort();
    }
    dns::Message basis = dns::reply_basis(query);
    dns::Message reply;
    reply.header = basis.header;
    reply.header.qr = true;
    reply.header.ra = true;
    reply.header.rcode = upstream.header.rcode;
    reply.questions = basis.questions;
    reply.answers = upstream.answers;
    reply.authority = upstream.authority;
    reply.additional = upstream.additional;
    size_t limit = dns::finish_reply(basis, reply);
    dns::WriteResult written = dns::write_message(reply, limit);
    if (written.bytes.size() > limit) std::abort();
    auto again = dns::parse_message(
        std::span(reinterpret_cast<const uint8_t*>(written.bytes.data()), written.bytes.size()));
    if (!again || again->header.id != query.header.id || again->questions != basis.questions) {
        std::abort();
    }
    return 0;
}
