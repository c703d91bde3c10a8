// libFuzzer target: addresses, prefixes and host:port (base/ip.h), the
// parsers every address from a flag, a file or the API server goes through.
// Invariants checked: every error is one line; what parses prints in
// canonical form and that form parses back to the same value (and prints
// the same: canonical text is a fixed point); IPv4 text that parses was
// already canonical (no leading zeros, no short forms); a prefix holds its
// own address, and without host bits it is the same as with them allowed;
// host:port prints as a form that parses back.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/ip.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using namespace sb;

void check_address(std::string_view text) {
    auto address = IpAddress::parse(text);
    if (!address) {
        FUZZ_REQUIRE_ONE_LINE(address.error().message);
        return;
    }
    const std::string canonical = address->to_string();
    auto again = IpAddress::parse(canonical);
    FUZZ_REQUIRE(again.ok() && *again == *address && again->to_string() == canonical);
    if (address->is_v4()) FUZZ_REQUIRE(canonical == text);
}

void check_prefix(std::string_view text) {
    auto strict = Prefix::parse(text);
    auto lenient = Prefix::parse(text, /*allow_host_bits=*/true);
    if (!strict) FUZZ_REQUIRE_ONE_LINE(strict.error().message);
    if (!lenient) {
        FUZZ_REQUIRE(!strict);
        FUZZ_REQUIRE_ONE_LINE(lenient.error().message);
        return;
    }
    if (strict) FUZZ_REQUIRE(*strict == *lenient);
    FUZZ_REQUIRE(lenient->contains(lenient->address()));
    FUZZ_REQUIRE(lenient->length() <= lenient->address().size() * 8);
    auto again = Prefix::parse(lenient->to_string());
    FUZZ_REQUIRE(again.ok() && *again == *lenient);
}

void check_host_port(std::string_view text, uint16_t default_port) {
    auto host_port = parse_host_port(text, default_port);
    if (!host_port) {
        FUZZ_REQUIRE_ONE_LINE(host_port.error().message);
        return;
    }
    FUZZ_REQUIRE(host_port->port != 0);
    auto again = parse_host_port(host_port->to_string());
    FUZZ_REQUIRE(again.ok() && *again == *host_port);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    check_address(text);
    check_prefix(text);
    check_host_port(text, 0);
    check_host_port(text, 53);
    return 0;
}
