#include "base/ip.h"

#include <arpa/inet.h>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/quote.h"

namespace sb {

const char* to_string(IpFamily family) {
    return family == IpFamily::kV4 ? "IPv4" : "IPv6";
}

Result<IpAddress> IpAddress::parse(std::string_view text) {
    // inet_pton needs a NUL-terminated string; 45 characters is the longest
    // valid IPv6 text (IPv4-mapped with full groups).
    // An embedded NUL would end inet_pton's string early ("10.0.0.1\0junk").
    if (text.empty() || text.size() > 45 || text.find('\0') != std::string_view::npos) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("invalid IP address {}", quote_for_message(text)));
    }
    char buffer[46];
    std::memcpy(buffer, text.data(), text.size());
    buffer[text.size()] = '\0';
    IpAddress result;
    if (text.find(':') == std::string_view::npos) {
        // glibc's inet_pton(AF_INET) accepts only four decimal parts and
        // rejects leading zeros, which is the strictness we want (Kubernetes
        // rejects "010.0.0.1" since 1.31 for the same ambiguity).
        if (inet_pton(AF_INET, buffer, result.bytes_.data()) == 1) {
            result.family_ = IpFamily::kV4;
            return result;
        }
    } else if (inet_pton(AF_INET6, buffer, result.bytes_.data()) == 1) {
        result.family_ = IpFamily::kV6;
        return result;
    }
    return make_error(ErrorCode::kInvalidArgument,
                      fmt::format("invalid IP address {}", quote_for_message(text)));
}

IpAddress IpAddress::v4(uint32_t host_order) {
    IpAddress result;
    result.family_ = IpFamily::kV4;
    uint32_t network = htonl(host_order);
    std::memcpy(result.bytes_.data(), &network, 4);
    return result;
}

IpAddress IpAddress::from_bytes(IpFamily family, const uint8_t* bytes) {
    IpAddress result;
    result.family_ = family;
    std::memcpy(result.bytes_.data(), bytes, family == IpFamily::kV4 ? 4 : 16);
    return result;
}

uint32_t IpAddress::v4_host_order() const {
    uint32_t network;
    std::memcpy(&network, bytes_.data(), 4);
    return ntohl(network);
}

bool IpAddress::is_unspecified() const {
    for (size_t i = 0; i < size(); ++i) {
        if (bytes_[i] != 0) return false;
    }
    return true;
}

bool IpAddress::is_loopback() const {
    if (is_v4()) return bytes_[0] == 127;
    for (size_t i = 0; i < 15; ++i) {
        if (bytes_[i] != 0) return false;
    }
    return bytes_[15] == 1;
}

bool IpAddress::is_link_local() const {
    if (is_v4()) return bytes_[0] == 169 && bytes_[1] == 254;
    return bytes_[0] == 0xfe && (bytes_[1] & 0xc0) == 0x80;
}

bool IpAddress::is_multicast() const {
    if (is_v4()) return (bytes_[0] & 0xf0) == 0xe0;
    return bytes_[0] == 0xff;
}

std::string IpAddress::to_string() const {
    char buffer[INET6_ADDRSTRLEN];
    inet_ntop(is_v4() ? AF_INET : AF_INET6, bytes_.data(), buffer, sizeof(buffer));
    return buffer;
}

Prefix::Prefix(IpAddress address, uint8_t length) : length_(length) {
    const size_t bits = address.size() * 8;
    if (length_ > bits) length_ = static_cast<uint8_t>(bits);
    uint8_t bytes[16];
    std::memcpy(bytes, address.bytes(), address.size());
    for (size_t i = 0; i < address.size(); ++i) {
        const size_t first_bit = i * 8;
        if (first_bit >= length_) {
            bytes[i] = 0;
        } else if (first_bit + 8 > length_) {
            bytes[i] &= static_cast<uint8_t>(0xff << (8 - (length_ - first_bit)));
        }
    }
    address_ = IpAddress::from_bytes(address.family(), bytes);
}

Result<Prefix> Prefix::parse(std::string_view text, bool allow_host_bits) {
    const auto slash = text.find('/');
    auto bad = [&](const char* why) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("invalid CIDR {}: {}", quote_for_message(text), why));
    };
    if (slash == std::string_view::npos) return bad("missing /length");
    auto address = IpAddress::parse(text.substr(0, slash));
    if (!address) return bad("invalid address");
    const auto length_text = text.substr(slash + 1);
    unsigned length = 0;
    auto [end, ec] =
        std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
    if (ec != std::errc() || end != length_text.data() + length_text.size() ||
        length_text.empty() || (length_text.size() > 1 && length_text[0] == '0')) {
        return bad("invalid length");
    }
    if (length > address->size() * 8) return bad("length out of range");
    Prefix prefix(*address, static_cast<uint8_t>(length));
    if (!allow_host_bits && prefix.address() != *address) return bad("host bits set");
    return prefix;
}

bool Prefix::contains(const IpAddress& address) const {
    if (address.family() != address_.family()) return false;
    return Prefix(address, length_).address() == address_;
}

std::string Prefix::to_string() const {
    return address_.to_string() + "/" + std::to_string(length_);
}

Result<uint16_t> validate_port(int64_t value, std::string_view what) {
    if (value < 1 || value > 65535) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("{}: port {} out of range 1-65535", what, value));
    }
    return static_cast<uint16_t>(value);
}

std::string HostPort::to_string() const {
    if (address.is_v6()) return "[" + address.to_string() + "]:" + std::to_string(port);
    return address.to_string() + ":" + std::to_string(port);
}

Result<HostPort> parse_host_port(std::string_view text, uint16_t default_port) {
    auto bad = [&](const std::string& why) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("invalid address {}: {}", quote_for_message(text), why));
    };
    std::string_view host = text;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos) return bad("missing ]");
        host = text.substr(1, close - 1);
        const auto rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return bad("expected :PORT after ]");
            port_text = rest.substr(1);
            if (port_text.empty()) return bad("empty port");
        }
    } else if (std::count(text.begin(), text.end(), ':') == 1) {
        const auto colon = text.find(':');
        host = text.substr(0, colon);
        port_text = text.substr(colon + 1);
        if (port_text.empty()) return bad("empty port");
    }
    auto address = IpAddress::parse(host);
    if (!address) return bad("not an IP address");
    HostPort result{*address, default_port};
    if (!port_text.empty()) {
        int64_t port = 0;
        auto [end, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc() || end != port_text.data() + port_text.size()) {
            return bad("invalid port");
        }
        auto valid = validate_port(port, "port");
        if (!valid) return bad(valid.error().message);
        result.port = *valid;
    }
    if (result.port == 0) return bad("a port is required");
    return result;
}

}  // namespace sb
