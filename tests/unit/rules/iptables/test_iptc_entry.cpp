// An x_tables entry read back (rules/iptables/iptc_entry.h): what
// decode_destination_match finds in the entries encode_entry writes.
#include <netinet/in.h>
#include <catch.hpp>

#include "rules/iptables/iptc_entry.h"

using namespace sb;
using namespace sb::rules::iptables;

namespace {

Rule frontend(const char* destination, uint8_t proto, uint16_t dport) {
    Rule r;
    r.destination = *Prefix::parse(destination);
    r.proto = proto;
    r.dport = dport;
    r.comment = "default/dns:dns/UDP cluster IP";
    r.target.kind = TargetKind::kJump;
    r.target.chain = "SWITCHBOARD-SVC-ABCDEFGHIJKL";
    return r;
}

DestinationMatch decoded(const Rule& rule, IpFamily family) {
    const EntryBuffer entry = encode_entry(rule, family);
    return decode_destination_match(entry.words.data(), family);
}

}  // namespace

TEST_CASE("iptc entry: the destination, protocol and port of a frontend rule read back") {
    for (const auto& [destination, family] :
         {std::pair{"10.96.0.10/32", IpFamily::kV4}, std::pair{"fd00:96::10/128", IpFamily::kV6}}) {
        for (const uint8_t proto : {IPPROTO_UDP, IPPROTO_TCP, IPPROTO_SCTP}) {
            INFO(destination << " proto " << int{proto});
            const DestinationMatch m = decoded(frontend(destination, proto, 53), family);
            CHECK(m.destination == *Prefix::parse(destination));
            CHECK_FALSE(m.destination_negate);
            CHECK(m.proto == proto);
            CHECK(m.dport == 53);
            CHECK(m.target.empty());  // libiptc names the target
        }
    }
}

TEST_CASE("iptc entry: other matches, negation and no destination read back as written") {
    Rule nodeport;  // -m addrtype --dst-type LOCAL ! -d 127.0.0.0/8 -p udp --dport 30053
    nodeport.destination = *Prefix::parse("127.0.0.0/8");
    nodeport.destination_negate = true;
    nodeport.dst_type_local = true;
    nodeport.proto = IPPROTO_UDP;
    nodeport.dport = 30053;
    nodeport.mark_match = true;
    nodeport.mark_value = nodeport.mark_mask = 0x4000;
    const DestinationMatch m = decoded(nodeport, IpFamily::kV4);
    CHECK(m.destination == *Prefix::parse("127.0.0.0/8"));
    CHECK(m.destination_negate);
    CHECK(m.proto == IPPROTO_UDP);
    CHECK(m.dport == 30053);

    Rule any;  // -j SWITCHBOARD-MARK-MASQ: nothing to match
    any.target.kind = TargetKind::kJump;
    any.target.chain = "SWITCHBOARD-MARK-MASQ";
    CHECK(decoded(any, IpFamily::kV6) == DestinationMatch{});

    Rule udp_only = frontend("10.96.0.10/32", IPPROTO_UDP, 0);  // -p udp, no port match
    CHECK(decoded(udp_only, IpFamily::kV4).dport == 0);
}
