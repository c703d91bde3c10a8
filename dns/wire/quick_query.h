// quick_parse: the fast path's look at a query, without building a Message:
// the question's name (lower-cased, as the rendered-reply cache's key), its
// type, and the EDNS fields that shape the reply. Anything unusual (QR or
// an opcode set, other sections, another class, compression, an OPT with a
// version, trailing bytes) is left to the full parser. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sb::dns {

// The reply-shaping parts of a query that the fast path reads.
struct QuickQuery {
    size_t name_end = 0;  // offset just past the question name
    uint16_t qtype = 0;
    bool edns = false;
    bool dnssec_ok = false;
    uint16_t udp_size = 0;
};

// True when `p` (n bytes) is a plain query the fast path may answer: `q`
// set, `key` the lower-cased wire name followed by the type (2 bytes).
// False: ask the full parser.
bool quick_parse(const uint8_t* p, size_t n, QuickQuery& q, std::string& key);

}  // namespace sb::dns
