#include "dns/wire/names.h"

#include <algorithm>

namespace sb::dns {

std::string reverse_name(const IpAddress& address) {
    std::string out;
    const uint8_t* bytes = address.bytes();
    if (address.is_v4()) {
        for (int i = 3; i >= 0; --i) {
            std::string label = std::to_string(bytes[i]);
            out.push_back(static_cast<char>(label.size()));
            out += label;
        }
        out += "\7in-addr\4arpa";
        out.push_back('\0');
        return out;
    }
    static const char* kHex = "0123456789abcdef";
    for (int i = 15; i >= 0; --i) {
        out.push_back('\1');
        out.push_back(kHex[bytes[i] & 0x0f]);
        out.push_back('\1');
        out.push_back(kHex[bytes[i] >> 4]);
    }
    out += "\3ip6\4arpa";
    out.push_back('\0');
    return out;
}

std::string dashed_address(const IpAddress& address) {
    std::string text = address.to_string();
    std::replace(text.begin(), text.end(), address.is_v4() ? '.' : ':', '-');
    return text;
}

Result<IpAddress> parse_dashed_address(std::string_view label) {
    std::string text(label);
    size_t dashes = std::count(text.begin(), text.end(), '-');
    // Exactly three dashes and no colon-worthy characters: IPv4; else IPv6.
    bool v4 = dashes == 3 && text.find_first_not_of("0123456789-") == std::string::npos;
    std::replace(text.begin(), text.end(), '-', v4 ? '.' : ':');
    return IpAddress::parse(text);
}

}  // namespace sb::dns
