#include "dns/wire/quick_query.h"

#include "dns/wire/wire.h"

namespace sb::dns {

namespace {

uint16_t get16(const uint8_t* p) {
    return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

}  // namespace

bool quick_parse(const uint8_t* p, size_t n, QuickQuery& q, std::string& key) {
    if (n < kHeaderSize + 5) return false;
    if ((p[2] & 0xf8) != 0) return false;  // QR or opcode set: full path
    if (get16(p + 4) != 1 || get16(p + 6) != 0 || get16(p + 8) != 0 || get16(p + 10) > 1) {
        return false;
    }
    key.clear();
    size_t pos = kHeaderSize;
    while (true) {
        if (pos >= n) return false;
        uint8_t length = p[pos];
        if (length == 0) break;
        if (length > kMaxLabelLength || pos + 1 + length >= n) return false;
        key.push_back(static_cast<char>(length));
        for (size_t i = 1; i <= length; ++i) {
            char c = static_cast<char>(p[pos + i]);
            key.push_back((c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c);
        }
        pos += 1 + length;
    }
    key.push_back('\0');
    if (key.size() > kMaxNameLength) return false;
    q.name_end = pos + 1;
    if (q.name_end + 4 > n) return false;
    q.qtype = get16(p + q.name_end);
    if (get16(p + q.name_end + 2) != kClassIN) return false;
    size_t end = q.name_end + 4;
    if (get16(p + 10) == 1) {
        // OPT: root owner, type 41, class = payload size, version 0.
        if (end + 11 > n || p[end] != 0 || get16(p + end + 1) != type::kOPT) return false;
        q.edns = true;
        q.udp_size = get16(p + end + 3);
        if (p[end + 6] != 0) return false;  // version: BADVERS on the full path
        q.dnssec_ok = p[end + 7] & 0x80;
        end += 11 + get16(p + end + 9);
    }
    if (end != n) return false;
    key.push_back(static_cast<char>(q.qtype >> 8));
    key.push_back(static_cast<char>(q.qtype & 0xff));
    return true;
}

}  // namespace sb::dns
