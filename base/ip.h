// IP addresses, prefixes and ports with strict parsing.
//
// Every address that reaches the kernel or a DNS answer passes through these
// types, so parsing is strict: IPv4 only in dotted-quad form without leading
// zeros, IPv6 per RFC 4291 text forms (no zone index), prefixes with the
// host bits cleared unless the caller allows otherwise. Values are plain,
// copyable and ordered (IPv4 before IPv6, then by bytes).
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "base/format.h"
#include "base/result.h"

namespace sb {

enum class IpFamily : uint8_t { kV4 = 4, kV6 = 6 };
// Both families, in the order every per-family series and loop uses.
inline constexpr std::array<IpFamily, 2> kIpFamilies = {IpFamily::kV4, IpFamily::kV6};

const char* to_string(IpFamily family);  // "IPv4" / "IPv6", as Kubernetes spells them

class IpAddress {
  public:
    IpAddress() = default;  // 0.0.0.0

    static Result<IpAddress> parse(std::string_view text);
    static IpAddress v4(uint32_t host_order);
    static IpAddress from_bytes(IpFamily family, const uint8_t* bytes);

    IpFamily family() const { return family_; }
    bool is_v4() const { return family_ == IpFamily::kV4; }
    bool is_v6() const { return family_ == IpFamily::kV6; }
    // 4 bytes for IPv4, 16 for IPv6, network order.
    const uint8_t* bytes() const { return bytes_.data(); }
    size_t size() const { return is_v4() ? 4 : 16; }
    // IPv4 address in host byte order; precondition: is_v4().
    uint32_t v4_host_order() const;

    bool is_unspecified() const;
    bool is_loopback() const;
    bool is_link_local() const;
    bool is_multicast() const;

    // Canonical text: dotted quad, or RFC 5952 for IPv6.
    std::string to_string() const;

    // Family first, then the bytes as unsigned, lexicographically: the
    // same order as a defaulted comparison, with one memcmp (hot in the
    // backends' element maps).
    std::strong_ordering operator<=>(const IpAddress& other) const {
        if (family_ != other.family_) return family_ <=> other.family_;
        return std::memcmp(bytes_.data(), other.bytes_.data(), bytes_.size()) <=> 0;
    }
    bool operator==(const IpAddress& other) const {
        return family_ == other.family_ &&
               std::memcmp(bytes_.data(), other.bytes_.data(), bytes_.size()) == 0;
    }

  private:
    IpFamily family_ = IpFamily::kV4;
    std::array<uint8_t, 16> bytes_{};
};

class Prefix {
  public:
    Prefix() = default;
    Prefix(IpAddress address, uint8_t length);  // clears host bits

    // "10.0.0.0/8", "fd00::/64". A bare address is not a prefix. With
    // allow_host_bits the host bits are cleared instead of rejected (Kubernetes
    // accepts "10.0.0.1/8" in loadBalancerSourceRanges).
    static Result<Prefix> parse(std::string_view text, bool allow_host_bits = false);

    const IpAddress& address() const { return address_; }
    uint8_t length() const { return length_; }
    IpFamily family() const { return address_.family(); }
    bool contains(const IpAddress& address) const;
    std::string to_string() const;

    auto operator<=>(const Prefix&) const = default;
    bool operator==(const Prefix&) const = default;

  private:
    IpAddress address_;
    uint8_t length_ = 0;
};

// A TCP/UDP/SCTP port number: 1-65535. Returns an error naming `what`.
Result<uint16_t> validate_port(int64_t value, std::string_view what);

// Parses "ADDR:PORT", "[V6ADDR]:PORT", or a bare address when default_port is
// set (port 0 means "no default: a port is required").
struct HostPort {
    IpAddress address;
    uint16_t port = 0;
    std::string to_string() const;
    auto operator<=>(const HostPort&) const = default;
};
Result<HostPort> parse_host_port(std::string_view text, uint16_t default_port = 0);

}  // namespace sb

template <>
struct fmt::formatter<sb::IpFamily> : sb::FormatAsText<sb::IpFamily> {};
template <>
struct fmt::formatter<sb::IpAddress> : sb::FormatAsText<sb::IpAddress> {};
template <>
struct fmt::formatter<sb::Prefix> : sb::FormatAsText<sb::Prefix> {};
template <>
struct fmt::formatter<sb::HostPort> : sb::FormatAsText<sb::HostPort> {};
