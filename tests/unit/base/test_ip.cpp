#include <catch.hpp>

#include "base/ip.h"

using sb::HostPort;
using sb::IpAddress;
using sb::Prefix;

TEST_CASE("IPv4 and IPv6 addresses parse strictly and print canonically") {
    CHECK(IpAddress::parse("10.96.0.10")->to_string() == "10.96.0.10");
    CHECK(IpAddress::parse("2001:DB8:0:0::1")->to_string() == "2001:db8::1");
    CHECK(IpAddress::parse("fd00::a")->is_v6());
    for (const char* bad : {"", "10.0.0", "10.0.0.256", "010.0.0.1", "1.2.3.4.5", "fe80::1%eth0",
                            "10.0.0.1 ", "::g", "a.b.c.d", "1:2:3:4:5:6:7:8:9"}) {
        INFO(bad);
        auto parsed = IpAddress::parse(bad);
        REQUIRE_FALSE(parsed.ok());
        CHECK(parsed.error().message.find("invalid IP address") != std::string::npos);
    }
    CHECK_FALSE(IpAddress::parse(std::string_view("10.0.0.1\0junk", 13)).ok());
}

TEST_CASE("address, prefix and host:port errors are one line whatever the text holds") {
    // Found by tests/fuzz/ip_fuzz.cpp: the text went into the message as it
    // was, control characters and newlines included.
    for (const auto& message : {IpAddress::parse("0\x03"
                                                 "10.0.0.1")
                                    .error()
                                    .message,
                                IpAddress::parse("10.0.0.1\n").error().message,
                                Prefix::parse("10.0.0.0/8\n").error().message,
                                sb::parse_host_port("10.0.0.1:\r\n").error().message}) {
        INFO(message);
        CHECK(message.find_first_of("\x03\r\n") == std::string::npos);
        CHECK(message.find('?') != std::string::npos);
    }
}

TEST_CASE("addresses order IPv4 before IPv6 and by bytes") {
    CHECK(*IpAddress::parse("10.0.0.2") < *IpAddress::parse("10.0.0.10"));
    CHECK(*IpAddress::parse("255.255.255.255") < *IpAddress::parse("::1"));
}

TEST_CASE("address classes") {
    CHECK(IpAddress::parse("127.0.0.53")->is_loopback());
    CHECK(IpAddress::parse("::1")->is_loopback());
    CHECK(IpAddress::parse("169.254.1.1")->is_link_local());
    CHECK(IpAddress::parse("fe80::1")->is_link_local());
    CHECK(IpAddress::parse("0.0.0.0")->is_unspecified());
    CHECK(IpAddress::parse("239.1.1.1")->is_multicast());
    CHECK_FALSE(IpAddress::parse("10.1.1.1")->is_loopback());
}

TEST_CASE("prefixes parse, reject host bits unless allowed, and contain addresses") {
    auto prefix = Prefix::parse("10.244.0.0/16");
    REQUIRE(prefix.ok());
    CHECK(prefix->contains(*IpAddress::parse("10.244.3.4")));
    CHECK_FALSE(prefix->contains(*IpAddress::parse("10.245.0.1")));
    CHECK_FALSE(prefix->contains(*IpAddress::parse("::1")));
    CHECK_FALSE(Prefix::parse("10.244.0.1/16").ok());
    CHECK(Prefix::parse("10.244.0.1/16", true)->to_string() == "10.244.0.0/16");
    CHECK(Prefix::parse("fd00:10::/64")->to_string() == "fd00:10::/64");
    CHECK(Prefix::parse("0.0.0.0/0")->contains(*IpAddress::parse("8.8.8.8")));
    for (const char* bad :
         {"10.0.0.0", "10.0.0.0/33", "10.0.0.0/", "10.0.0.0/08", "::/129", "x/8"}) {
        INFO(bad);
        CHECK_FALSE(Prefix::parse(bad).ok());
    }
}

TEST_CASE("ports are validated to 1-65535 with the field named") {
    CHECK(*sb::validate_port(53, "port") == 53);
    auto zero = sb::validate_port(0, "spec.ports[0].port");
    REQUIRE_FALSE(zero.ok());
    CHECK(zero.error().message.find("spec.ports[0].port") != std::string::npos);
    CHECK_FALSE(sb::validate_port(65536, "port").ok());
}

TEST_CASE("host:port parsing covers IPv4, bracketed IPv6 and default ports") {
    CHECK(sb::parse_host_port("127.0.0.1:10249")->to_string() == "127.0.0.1:10249");
    CHECK(sb::parse_host_port("[::1]:53")->to_string() == "[::1]:53");
    CHECK(sb::parse_host_port("10.0.0.10", 53)->port == 53);
    CHECK(sb::parse_host_port("fd00::10", 53)->to_string() == "[fd00::10]:53");
    CHECK_FALSE(sb::parse_host_port("10.0.0.10").ok());
    CHECK_FALSE(sb::parse_host_port("10.0.0.10:0").ok());
    CHECK_FALSE(sb::parse_host_port("10.0.0.10:99999").ok());
    CHECK_FALSE(sb::parse_host_port("[::1]53").ok());
    CHECK_FALSE(sb::parse_host_port("host:53").ok());
}
