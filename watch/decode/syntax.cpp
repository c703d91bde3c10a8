#include "watch/decode/syntax.h"

#include <algorithm>
#include <cstdint>

namespace sb::watch {

namespace {

bool is_alnum_lower(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

}  // namespace

namespace decoding {

bool is_dns1035_label(std::string_view text) {
    return is_dns_label(text) && text[0] >= 'a' && text[0] <= 'z';
}

bool is_label_value(std::string_view text) {
    if (text.empty() || text.size() > 63) return false;
    auto alnum = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    };
    if (!alnum(text.front()) || !alnum(text.back())) return false;
    return std::all_of(text.begin(), text.end(),
                       [&](char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool is_qualified_name(std::string_view text) {
    const size_t slash = text.find('/');
    std::string_view name = text;
    if (slash != std::string_view::npos) {
        if (!is_dns_subdomain(text.substr(0, slash))) return false;
        name = text.substr(slash + 1);
    }
    return is_label_value(name);
}

bool is_iana_svc_name(std::string_view text) {
    if (text.empty() || text.size() > 15) return false;
    if (text.front() == '-' || text.back() == '-') return false;
    if (text.find("--") != std::string_view::npos) return false;
    bool letter = false;
    for (char c : text) {
        if (c >= 'a' && c <= 'z') {
            letter = true;
        } else if (!(c >= '0' && c <= '9') && c != '-') {
            return false;
        }
    }
    return letter;
}

// IpAddress::parse hands the text to inet_pton, which stops at a NUL; the
// character check first keeps "10.0.0.1\0junk" from passing as 10.0.0.1.
std::optional<IpAddress> parse_ip(std::string_view text) {
    for (char c : text) {
        const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
                        (c >= 'A' && c <= 'F') || c == '.' || c == ':';
        if (!ok) return std::nullopt;
    }
    auto parsed = IpAddress::parse(text);
    if (!parsed) return std::nullopt;
    return *parsed;
}

std::string special_endpoint_range(const IpAddress& address) {
    IpAddress ip = address;
    const uint8_t* b = address.bytes();
    if (address.is_v6() && std::all_of(b, b + 10, [](uint8_t x) { return x == 0; }) &&
        b[10] == 0xff && b[11] == 0xff) {
        ip = IpAddress::from_bytes(IpFamily::kV4, b + 12);
    }
    const uint8_t* v = ip.bytes();
    if (ip.is_unspecified()) return "may not be unspecified (0.0.0.0, ::)";
    if (ip.is_loopback()) return "may not be in the loopback range (127.0.0.0/8, ::1/128)";
    if (ip.is_link_local()) {
        return "may not be in the link-local range (169.254.0.0/16, fe80::/10)";
    }
    const bool link_local_multicast =
        ip.is_v4() ? v[0] == 224 && v[1] == 0 && v[2] == 0 : v[0] == 0xff && (v[1] & 0x0f) == 0x02;
    if (link_local_multicast) {
        return "may not be in the link-local multicast range (224.0.0.0/24, ff02::/16)";
    }
    return "";
}

}  // namespace decoding

bool is_dns_label(std::string_view text) {
    if (text.empty() || text.size() > 63) return false;
    if (!is_alnum_lower(text.front()) || !is_alnum_lower(text.back())) return false;
    return std::all_of(text.begin(), text.end(),
                       [](char c) { return is_alnum_lower(c) || c == '-'; });
}

bool is_dns_subdomain(std::string_view text) {
    if (text.empty() || text.size() > 253) return false;
    while (true) {
        const size_t dot = text.find('.');
        if (!is_dns_label(text.substr(0, dot))) return false;
        if (dot == std::string_view::npos) return true;
        text.remove_prefix(dot + 1);
    }
}

}  // namespace sb::watch
