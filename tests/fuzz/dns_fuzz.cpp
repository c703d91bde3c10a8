// libFuzzer target: the DNS query path (parse -> resolve -> write) over a
// fixed zone. Invariants checked: nothing crashes or reads out of bounds
// (ASan/UBSan), every reply we write parses again, and a parsed message
// written back parses to the same questions.
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "dns/wire/wire.h"
#include "dns/zone/resolver.h"
#include "dns/zone/zone.h"
#include "tests/fuzz/fuzz_zone.h"

namespace {

using namespace sb;

// Compression is case-insensitive (a name may point at a differently-cased
// copy), so names compare lower-cased.
bool same_questions(const std::vector<dns::Question>& a, const std::vector<dns::Question>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (dns::name_lower(a[i].name) != dns::name_lower(b[i].name) || a[i].qtype != b[i].qtype ||
            a[i].qclass != b[i].qclass) {
            return false;
        }
    }
    return true;
}

void check_parses(const std::string& bytes) {
    auto again = dns::parse_message({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    if (!again) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto zone = make_fuzz_zone();
    std::span<const uint8_t> packet(data, size);
    auto parsed = dns::parse_message(packet);
    if (!parsed) {
        std::string reply = dns::error_reply(packet, dns::Rcode::kFormErr);
        if (!reply.empty()) check_parses(reply);
        return 0;
    }
    dns::WriteResult rewritten = dns::write_message(*parsed);
    auto reparsed = dns::parse_message(
        {reinterpret_cast<const uint8_t*>(rewritten.bytes.data()), rewritten.bytes.size()});
    if (!rewritten.truncated &&
        (!reparsed || !same_questions(reparsed->questions, parsed->questions))) {
        std::abort();
    }
    for (bool forwarding : {false, true}) {
        dns::Resolution resolution = dns::resolve(zone.get(), *parsed, {forwarding});
        if (resolution.kind == dns::Resolution::Kind::kDrop) continue;
        size_t limit = dns::finish_reply(*parsed, resolution.response);
        dns::WriteResult reply = dns::write_message(resolution.response, limit);
        // A truncated reply (header, one question, OPT) always fits 512.
        if (reply.bytes.size() > limit) std::abort();
        check_parses(reply.bytes);
    }
    return 0;
}
