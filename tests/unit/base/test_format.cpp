// fmt formatting of the base value types: each is written as its own text,
// and the string format spec (width, alignment) applies to that text.
#include <catch.hpp>

#include "base/ip.h"
#include "base/protocol.h"

namespace sb {
namespace {

TEST_CASE("fmt writes base value types as their text") {
    const auto address = IpAddress::parse("fd00::1").value();
    CHECK(fmt::format("{}", address) == "fd00::1");
    CHECK(fmt::format("{}", Prefix::parse("10.96.0.0/12").value()) == "10.96.0.0/12");
    CHECK(fmt::format("{}", parse_host_port("[fd00::1]:53").value()) == "[fd00::1]:53");
    CHECK(fmt::format("{} {}", IpFamily::kV4, IpFamily::kV6) == "IPv4 IPv6");
    CHECK(fmt::format("{}/{}", 80, Protocol::kSCTP) == "80/SCTP");
}

TEST_CASE("fmt applies the string spec to a value's text") {
    CHECK(fmt::format("[{:>9}]", IpAddress::parse("10.0.0.1").value()) == "[ 10.0.0.1]");
    CHECK(fmt::format("[{:<4}]", Protocol::kUDP) == "[UDP ]");
}

}  // namespace
}  // namespace sb
