// The netlink spelling of the model's values, without a socket: element
// keys and values survive encoding and decoding (the affinity cleanup
// decodes the kernel's keys and deletes by them), and every set type
// switchboard creates is recognised when read back.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/nftables/netlink_encoding.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules::nftables;
using sb::rules::testing::ip;

namespace {

constexpr SetLayout kLayouts[] = {SetLayout::kAddrProtoPortVerdict,
                                  SetLayout::kProtoPortVerdict,
                                  SetLayout::kAddrAddr,
                                  SetLayout::kAddr,
                                  SetLayout::kAffinity,
                                  SetLayout::kBackendsByAddress,
                                  SetLayout::kBackendsByPort};

// A key with the fields `layout` has, the others left at their defaults.
ElementKey key_for(SetLayout layout, IpFamily family) {
    const bool v4 = family == IpFamily::kV4;
    ElementKey k;
    const bool has_a =
        layout != SetLayout::kProtoPortVerdict && layout != SetLayout::kBackendsByPort;
    const bool has_b = layout == SetLayout::kAddrAddr || layout == SetLayout::kAffinity;
    const bool has_port = layout != SetLayout::kAddrAddr && layout != SetLayout::kAddr;
    if (has_a) k.a = ip(v4 ? "10.244.5.5" : "fd00:244::5");
    if (has_b) k.b = ip(v4 ? "10.96.0.11" : "fd00:96::11");
    if (has_port) {
        k.proto = IPPROTO_UDP;
        k.port = 8443;
    }
    if (layout == SetLayout::kBackendsByAddress || layout == SetLayout::kBackendsByPort) {
        k.slot = 7;
    }
    return k;
}

}  // namespace

TEST_CASE("netlink encoding: element keys decode to what was encoded, in every layout") {
    for (const SetLayout layout : kLayouts) {
        for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
            const ElementKey k = key_for(layout, family);
            const std::vector<uint8_t> bytes = key_bytes(layout, k);
            INFO("layout " << static_cast<int>(layout) << " family " << static_cast<int>(family));
            CHECK(bytes.size() == shape_of(layout, family).key_len);
            const auto back =
                key_from_bytes(layout, family, bytes.data(), static_cast<uint32_t>(bytes.size()));
            REQUIRE(back.has_value());
            CHECK(*back == k);
            CHECK_FALSE(key_from_bytes(layout, family, bytes.data(),
                                       static_cast<uint32_t>(bytes.size()) - 1));
        }
    }
}

TEST_CASE("netlink encoding: a port is in network order, padded to its register") {
    ElementKey k;
    k.proto = IPPROTO_TCP;
    k.port = 0x1f90;
    CHECK(key_bytes(SetLayout::kProtoPortVerdict, k) ==
          std::vector<uint8_t>{IPPROTO_TCP, 0, 0, 0, 0x1f, 0x90, 0, 0});
}

TEST_CASE("netlink encoding: endpoint values decode to address and port") {
    for (const char* address : {"10.244.1.8", "fd00:244::8"}) {
        const Verdict v(VerdictKind::kNone, {}, ip(address), 9090);
        const std::vector<uint8_t> bytes = endpoint_bytes(v);
        const IpFamily family = v.address.family();
        CHECK(bytes.size() == shape_of(SetLayout::kAffinity, family).data_len);
        const auto back =
            endpoint_from_bytes(family, bytes.data(), static_cast<uint32_t>(bytes.size()));
        REQUIRE(back.has_value());
        CHECK(*back == v);
        CHECK_FALSE(endpoint_from_bytes(family, bytes.data(), 3));
    }
}

TEST_CASE("netlink encoding: every set type switchboard creates is recognised read back") {
    for (const SetLayout layout : kLayouts) {
        for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
            const SetShape s = shape_of(layout, family);
            const std::string name = family == IpFamily::kV4 ? "set4" : "set6";
            const auto type = layout_of(name, s.flags, s.key_type, s.key_len, s.data_type);
            INFO("layout " << static_cast<int>(layout) << " family " << static_cast<int>(family));
            REQUIRE(type.has_value());
            CHECK(type->layout == layout);
            CHECK(type->family == family);
        }
    }
    // A type of someone else's: an IPv4 set keyed by port.
    const SetShape odd = shape_of(SetLayout::kAddr, IpFamily::kV4);
    CHECK_FALSE(layout_of("odd", odd.flags, 13, 2, 0));
}
