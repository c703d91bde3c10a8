#include "rules/naming.h"

#include <netinet/in.h>

namespace sb::rules {

std::string proto_name(uint8_t proto) {
    switch (proto) {
        case IPPROTO_TCP:
            return "tcp";
        case IPPROTO_UDP:
            return "udp";
        case IPPROTO_SCTP:
            return "sctp";
        default:
            return std::to_string(proto);
    }
}

std::string base32_hash(std::string_view text, size_t chars) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
    for (char c : text) {
        h ^= static_cast<uint8_t>(c);
        h *= 1099511628211ULL;
    }
    static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    std::string out;
    for (size_t i = 0; i < chars && i < 12; ++i) {
        out += kAlphabet[h & 31];
        h >>= 5;
    }
    return out;
}

}  // namespace sb::rules
