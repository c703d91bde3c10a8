// libFuzzer target: the DNS server's own handling of outside bytes, apart
// from the codec dns_fuzz covers.
// * quick_parse (dns/wire/quick_query.h): when it takes a packet, the full
//   parser takes it too and agrees on the question, the class and the EDNS
//   fields (else the fast path would answer what the full path refuses).
// * render-cache patching (dns/serve/render_cache.h): the reply rendered for the
//   lower-cased question, stored and patched for this packet, parses, and
//   carries the packet's ID, RD, CD and question bytes.
// * TCP framing (dns/serve/tcp_stream.h): the input as a TCP byte stream, fed in
//   chunks whose sizes come from the input, answered with replies of sizes
//   from the input and sent in pieces: the queries come out as the
//   reference framing cuts them, the held input never exceeds one frame,
//   unsent replies never exceed the output bound plus one frame, and the
//   stream finishes once the peer half-closes and everything is sent.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dns/serve/render_cache.h"
#include "dns/serve/tcp_stream.h"
#include "dns/wire/quick_query.h"
#include "dns/wire/wire.h"
#include "dns/zone/resolver.h"
#include "dns/zone/zone.h"
#include "tests/fuzz/fuzz_zone.h"

namespace {

using namespace sb;

void require(bool condition) {
    if (!condition) std::abort();
}

std::string lower(const std::string& text) {
    std::string out = text;
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return out;
}

// The quick path against the full parser, then the rendered reply patched
// for this packet.
void check_quick_path(const dns::Zone& zone, const uint8_t* data, size_t size) {
    dns::QuickQuery quick;
    std::string key;
    if (!dns::quick_parse(data, size, quick, key)) return;
    auto parsed = dns::parse_message({data, size});
    require(parsed.ok());
    require(parsed->questions.size() == 1);
    const dns::Question& question = parsed->questions[0];
    require(question.qtype == quick.qtype && question.qclass == dns::kClassIN);
    const std::string name = dns::name_lower(question.name);
    require(key.size() == name.size() + 2 && key.compare(0, name.size(), name) == 0);
    require(lower(std::string(reinterpret_cast<const char*>(data) + dns::kHeaderSize,
                              quick.name_end - dns::kHeaderSize)) == name);
    require(parsed->edns.has_value() == quick.edns);
    if (quick.edns) {
        require(parsed->edns->dnssec_ok == quick.dnssec_ok);
        require(parsed->edns->udp_size == quick.udp_size);
    }

    // Rendered as the server renders over TCP, for another query with the
    // same key: the question lower-cased, another ID, RD and CD flipped.
    dns::Message asked = *parsed;
    asked.questions[0].name = name;
    asked.header.id = static_cast<uint16_t>(~asked.header.id);
    asked.header.rd = !asked.header.rd;
    asked.header.cd = !asked.header.cd;
    dns::Resolution resolution = dns::resolve(&zone, asked, {false});
    if (resolution.kind != dns::Resolution::Kind::kReply) return;
    dns::finish_reply(asked, resolution.response);
    dns::WriteResult written = dns::write_message(resolution.response, 65535);
    dns::RenderCache cache;
    uint64_t h = dns::RenderCache::hash(key);
    cache.insert(key, h, written);
    const dns::RenderCache::Entry* entry = cache.find(key, h);
    require(entry != nullptr);
    std::string reply;
    dns::RenderCache::reply_to(*entry, {data, size}, quick.name_end, reply);
    auto again = dns::parse_message({reinterpret_cast<const uint8_t*>(reply.data()), reply.size()});
    require(again.ok());
    require(again->header.id == parsed->header.id && again->header.rd == parsed->header.rd &&
            again->header.cd == parsed->header.cd);
    require(again->questions.size() == 1 &&
            std::memcmp(reply.data() + dns::kHeaderSize, data + dns::kHeaderSize,
                        quick.name_end - dns::kHeaderSize) == 0);
}

// Sizes taken in turn from `data`, each 1..limit.
class Sizes {
  public:
    Sizes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    size_t next(size_t limit) {
        if (size_ == 0) return limit;
        size_t value = (static_cast<size_t>(data_[at_ % size_]) << 8) | data_[(at_ + 1) % size_];
        at_ += 2;
        return 1 + value % limit;
    }

  private:
    const uint8_t* data_;
    size_t size_;
    size_t at_ = 0;
};

// Replies are prefixes of this: their bytes do not matter, their sizes do.
const std::string kReply(65535, 'r');

void check_framing(const uint8_t* data, size_t size) {
    // The reference: frames cut from the whole stream at once.
    std::vector<std::string> expected;
    for (size_t at = 0; at + 2 <= size;) {
        size_t length = (static_cast<size_t>(data[at]) << 8) | data[at + 1];
        if (size - at - 2 < length) break;
        expected.emplace_back(reinterpret_cast<const char*>(data) + at + 2, length);
        at += 2 + length;
    }
    Sizes sizes(data, size);
    dns::TcpStream stream(dns::TcpStream::Clock::time_point{});
    std::vector<std::string> got;
    size_t fed = 0;
    size_t replies = 0;
    size_t sent = 0;
    // Each round: read what the stream allows, answer, send a piece. A
    // round without progress sends everything (a client that reads).
    for (int rounds = 0; !stream.finished(); ++rounds) {
        require(rounds < 1'000'000);
        bool progress = false;
        if (size_t room = stream.read_room(); room > 0 && fed < size) {
            size_t n = std::min({room, size - fed, sizes.next(70000)});
            stream.received({reinterpret_cast<const char*>(data) + fed, n});
            fed += n;
            progress = true;
        } else if (fed == size && !stream.input_ended()) {
            stream.received_end();
            progress = true;
        }
        std::span<const uint8_t> query;
        while (stream.next_query({}, query)) {
            got.emplace_back(reinterpret_cast<const char*>(query.data()), query.size());
            require(stream.queue_reply(std::string_view(kReply).substr(0, sizes.next(65535))));
            ++replies;
            progress = true;
        }
        require(stream.unsent().size() < dns::TcpStream::kOutputBound + dns::TcpStream::kMaxFrame);
        size_t piece = progress ? std::min(stream.unsent().size(), sizes.next(100000))
                                : stream.unsent().size();
        stream.sent(piece);
        sent += piece;
        require(stream.read_room() <= dns::TcpStream::kMaxFrame);
    }
    require(got == expected);
    require(replies == expected.size());
    require(stream.unsent().empty() && sent >= replies * 2);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto zone = make_fuzz_zone();
    check_quick_path(*zone, data, size);
    check_framing(data, size);
    return 0;
}
