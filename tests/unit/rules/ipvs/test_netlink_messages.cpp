// The IPVS generic-netlink messages without a socket: each request's
// command, version, flags and attribute bytes against the layout the
// kernel's ip_vs_ctl.c parses, the listings' replies (built here as the
// kernel's ip_vs_genl_fill_service / _fill_dest write them) parsed back, and
// every value the builders refuse to send.
#include <linux/ip_vs.h>
#include <netinet/in.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <sys/socket.h>
#include <catch.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rules/ipvs/netlink_messages.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules::ipvs;
using sb::rules::testing::ip;

namespace {

constexpr int kFamily = 37;  // the id genl_ctrl_resolve gave "IPVS"

using Bytes = std::vector<uint8_t>;

// One attribute as it is on the wire: its type field (flags included: libnl
// marks nests NLA_F_NESTED, which the kernel's parsers accept) and its
// payload.
struct Attribute {
    uint16_t type = 0;
    Bytes payload;
    bool operator==(const Attribute&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Attribute& a) {
    out << "{type " << a.type << ":";
    for (uint8_t b : a.payload) out << " " << static_cast<int>(b);
    return out << "}";
}

std::vector<Attribute> walk(const void* data, int length) {
    std::vector<Attribute> out;
    const auto* attr = static_cast<const nlattr*>(data);
    int remaining = length;
    while (nla_ok(attr, remaining)) {
        const auto* payload = static_cast<const uint8_t*>(nla_data(attr));
        out.push_back({attr->nla_type, Bytes(payload, payload + nla_len(attr))});
        attr = nla_next(attr, &remaining);
    }
    REQUIRE(remaining == 0);
    return out;
}

std::vector<Attribute> top_attributes(const Message& msg) {
    const nlmsghdr* header = nlmsg_hdr(msg.get());
    auto* genl = static_cast<genlmsghdr*>(nlmsg_data(header));
    return walk(genlmsg_attrdata(genl, 0), genlmsg_attrlen(genl, 0));
}

std::vector<Attribute> nested(const Attribute& a) {
    return walk(a.payload.data(), static_cast<int>(a.payload.size()));
}

// Host-order bytes of a u16 / u32 attribute.
Bytes u16(uint16_t v) {
    Bytes out(2);
    std::memcpy(out.data(), &v, 2);
    return out;
}
Bytes u32(uint32_t v) {
    Bytes out(4);
    std::memcpy(out.data(), &v, 4);
    return out;
}
Bytes network_port(uint16_t port) {
    return {static_cast<uint8_t>(port >> 8), static_cast<uint8_t>(port & 0xff)};
}
// union nf_inet_addr: the address's bytes, zero-padded to 16.
Bytes inet_addr(const IpAddress& address) {
    Bytes out(16, 0);
    std::memcpy(out.data(), address.bytes(), address.size());
    return out;
}
Bytes text(const char* s) {
    return Bytes(s, s + std::strlen(s) + 1);
}
Bytes flags(uint32_t flags, uint32_t mask) {
    Bytes out = u32(flags);
    const Bytes m = u32(mask);
    out.insert(out.end(), m.begin(), m.end());
    return out;
}

void check_header(const Message& msg, uint8_t command, uint16_t nl_flags) {
    const nlmsghdr* header = nlmsg_hdr(msg.get());
    CHECK(header->nlmsg_type == kFamily);
    CHECK(header->nlmsg_flags == nl_flags);
    const auto* genl = static_cast<const genlmsghdr*>(nlmsg_data(header));
    CHECK(genl->cmd == command);
    CHECK(genl->version == IPVS_GENL_VERSION);
}

const ServiceKey kKey4{ip("10.96.0.1"), IPPROTO_TCP, 443};
const ServiceKey kKey6{ip("fd00:96::a"), IPPROTO_UDP, 53};

std::vector<Attribute> key_attributes(const ServiceKey& key) {
    return {
        {IPVS_SVC_ATTR_AF, u16(key.address.is_v4() ? AF_INET : AF_INET6)},
        {IPVS_SVC_ATTR_PROTOCOL, u16(key.protocol)},
        {IPVS_SVC_ATTR_ADDR, inet_addr(key.address)},
        {IPVS_SVC_ATTR_PORT, network_port(key.port)},
    };
}

Message build(const Op& op) {
    auto msg = build_op(kFamily, op);
    REQUIRE(msg.ok());
    return std::move(*msg);
}

RealServer real_server(const char* address, uint16_t port, uint32_t weight = 1) {
    RealServer out;
    out.address = ip(address);
    out.port = port;
    out.weight = weight;
    return out;
}

}  // namespace

TEST_CASE("an added virtual server carries its key, scheduler, flags, timeout and netmask",
          "[netlink]") {
    Op op{OpKind::kAddService, VirtualServer{kKey4, "rr", false, 0}, {}};
    const Message msg = build(op);
    check_header(msg, IPVS_CMD_NEW_SERVICE, NLM_F_REQUEST | NLM_F_ACK);
    const auto top = top_attributes(msg);
    REQUIRE(top.size() == 1);
    CHECK(top[0].type == (IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED));
    // IPv4 address in the first 4 bytes, port 443 as 0x01 0xbb.
    auto expected = key_attributes(kKey4);
    CHECK(expected[2].payload == Bytes{10, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK(expected[3].payload == Bytes{0x01, 0xbb});
    expected.push_back({IPVS_SVC_ATTR_SCHED_NAME, text("rr")});
    expected.push_back({IPVS_SVC_ATTR_FLAGS, flags(0, 0xffffffff)});
    expected.push_back({IPVS_SVC_ATTR_TIMEOUT, u32(0)});
    expected.push_back({IPVS_SVC_ATTR_NETMASK, Bytes{0xff, 0xff, 0xff, 0xff}});
    CHECK(nested(top[0]) == expected);
}

TEST_CASE("an edited IPv6 virtual server with persistence sets the flag and a /128 netmask",
          "[netlink]") {
    Op op{OpKind::kEditService, VirtualServer{kKey6, "sh", true, 10800}, {}};
    const Message msg = build(op);
    check_header(msg, IPVS_CMD_SET_SERVICE, NLM_F_REQUEST | NLM_F_ACK);
    const auto top = top_attributes(msg);
    REQUIRE(top.size() == 1);
    CHECK(top[0].type == (IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED));
    auto expected = key_attributes(kKey6);
    CHECK(expected[2].payload ==
          Bytes{0xfd, 0x00, 0x00, 0x96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a});
    CHECK(expected[3].payload == Bytes{0x00, 0x35});
    expected.push_back({IPVS_SVC_ATTR_SCHED_NAME, text("sh")});
    expected.push_back({IPVS_SVC_ATTR_FLAGS, flags(IP_VS_SVC_F_PERSISTENT, 0xffffffff)});
    expected.push_back({IPVS_SVC_ATTR_TIMEOUT, u32(10800)});
    expected.push_back({IPVS_SVC_ATTR_NETMASK, u32(128)});
    CHECK(nested(top[0]) == expected);
}

TEST_CASE("a deleted virtual server carries its key alone", "[netlink]") {
    // Scheduler and persistence are not looked at: a listed server of a
    // scheduler switchboard does not use can still be deleted.
    Op op{OpKind::kDeleteService, VirtualServer{kKey4, "mh", false, 0}, {}};
    const Message msg = build(op);
    check_header(msg, IPVS_CMD_DEL_SERVICE, NLM_F_REQUEST | NLM_F_ACK);
    const auto top = top_attributes(msg);
    REQUIRE(top.size() == 1);
    CHECK(top[0].type == (IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED));
    CHECK(nested(top[0]) == key_attributes(kKey4));
}

TEST_CASE("an added or edited real server carries masquerade, weight, thresholds and family",
          "[netlink]") {
    const auto [kind, command] = GENERATE(table<OpKind, uint8_t>({
        {OpKind::kAddDestination, IPVS_CMD_NEW_DEST},
        {OpKind::kEditDestination, IPVS_CMD_SET_DEST},
    }));
    Op op{kind, VirtualServer{kKey4, "rr", false, 0}, real_server("10.244.1.7", 8443, 0)};
    const Message msg = build(op);
    check_header(msg, command, NLM_F_REQUEST | NLM_F_ACK);
    const auto top = top_attributes(msg);
    REQUIRE(top.size() == 2);
    CHECK(top[0].type == (IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED));
    CHECK(nested(top[0]) == key_attributes(kKey4));
    CHECK(top[1].type == (IPVS_CMD_ATTR_DEST | NLA_F_NESTED));
    const std::vector<Attribute> expected = {
        {IPVS_DEST_ATTR_ADDR, Bytes{10, 244, 1, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {IPVS_DEST_ATTR_PORT, Bytes{0x20, 0xfb}},
        {IPVS_DEST_ATTR_FWD_METHOD, u32(IP_VS_CONN_F_MASQ)},
        {IPVS_DEST_ATTR_WEIGHT, u32(0)},
        {IPVS_DEST_ATTR_U_THRESH, u32(0)},
        {IPVS_DEST_ATTR_L_THRESH, u32(0)},
        {IPVS_DEST_ATTR_ADDR_FAMILY, u16(AF_INET)},
    };
    CHECK(nested(top[1]) == expected);
}

TEST_CASE("a deleted IPv6 real server carries its address, port and family", "[netlink]") {
    Op op{OpKind::kDeleteDestination, VirtualServer{kKey6, "rr", false, 0},
          real_server("fd00:244::7", 5353, 3)};
    const Message msg = build(op);
    check_header(msg, IPVS_CMD_DEL_DEST, NLM_F_REQUEST | NLM_F_ACK);
    const auto top = top_attributes(msg);
    REQUIRE(top.size() == 2);
    CHECK(top[0].type == (IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED));
    CHECK(nested(top[0]) == key_attributes(kKey6));
    CHECK(top[1].type == (IPVS_CMD_ATTR_DEST | NLA_F_NESTED));
    const std::vector<Attribute> expected = {
        {IPVS_DEST_ATTR_ADDR, inet_addr(ip("fd00:244::7"))},
        {IPVS_DEST_ATTR_PORT, Bytes{0x14, 0xe9}},
        {IPVS_DEST_ATTR_ADDR_FAMILY, u16(AF_INET6)},
    };
    CHECK(nested(top[1]) == expected);
}

TEST_CASE("the virtual server dump is a GET_SERVICE dump without attributes", "[netlink]") {
    auto msg = build_service_dump(kFamily);
    REQUIRE(msg.ok());
    check_header(*msg, IPVS_CMD_GET_SERVICE, NLM_F_REQUEST | NLM_F_DUMP);
    CHECK(top_attributes(*msg).empty());
}

TEST_CASE("the real server dump names its virtual server by key", "[netlink]") {
    auto msg = build_destination_dump(kFamily, kKey6);
    REQUIRE(msg.ok());
    check_header(*msg, IPVS_CMD_GET_DEST, NLM_F_REQUEST | NLM_F_DUMP);
    const auto top = top_attributes(*msg);
    REQUIRE(top.size() == 1);
    CHECK(top[0].type == (IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED));
    CHECK(nested(top[0]) == key_attributes(kKey6));
}

TEST_CASE("SET_CONFIG carries the non-zero timeouts only", "[netlink]") {
    auto all = build_set_config(kFamily, Timeouts{900, 120, 300});
    REQUIRE(all.ok());
    check_header(*all, IPVS_CMD_SET_CONFIG, NLM_F_REQUEST | NLM_F_ACK);
    CHECK(top_attributes(*all) == std::vector<Attribute>{
                                      {IPVS_CMD_ATTR_TIMEOUT_TCP, u32(900)},
                                      {IPVS_CMD_ATTR_TIMEOUT_TCP_FIN, u32(120)},
                                      {IPVS_CMD_ATTR_TIMEOUT_UDP, u32(300)},
                                  });
    auto udp = build_set_config(kFamily, Timeouts{0, 0, 30});
    REQUIRE(udp.ok());
    CHECK(top_attributes(*udp) == std::vector<Attribute>{{IPVS_CMD_ATTR_TIMEOUT_UDP, u32(30)}});
}

namespace {

void check_refused(const Op& op, const std::string& why) {
    auto msg = build_op(kFamily, op);
    REQUIRE_FALSE(msg.ok());
    CHECK(msg.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(msg.error().message, Catch::Contains(why));
}

}  // namespace

TEST_CASE("a virtual server with a bad key, scheduler or persistence is never built", "[netlink]") {
    const auto kind = GENERATE(OpKind::kAddService, OpKind::kEditService);
    VirtualServer good{kKey4, "rr", false, 0};
    for (const char* scheduler :
         {"rr", "lc", "dh", "sh", "sed", "nq", "wrr", "wlc", "lblc", "lblcr"}) {
        VirtualServer server = good;
        server.scheduler = scheduler;
        CHECK(build_op(kFamily, Op{kind, server, {}}).ok());
    }
    VirtualServer server = good;
    server.key.protocol = IPPROTO_ICMP;
    check_refused(Op{kind, server, {}}, "not TCP, UDP or SCTP");
    server = good;
    server.key.port = 0;
    check_refused(Op{kind, server, {}}, "port 0");
    server = good;
    server.scheduler = "fo";
    check_refused(Op{kind, server, {}}, "unknown scheduler \"fo\"");
    server.scheduler = "";
    check_refused(Op{kind, server, {}}, "unknown scheduler");
    server = good;
    server.persistent = true;
    server.timeout_seconds = 0;
    check_refused(Op{kind, server, {}}, "persistence timeout of 0 s");
    server.timeout_seconds = 86401;
    check_refused(Op{kind, server, {}}, "persistence timeout of 86401 s");
    server.timeout_seconds = 86400;
    CHECK(build_op(kFamily, Op{kind, server, {}}).ok());
    server.persistent = false;
    check_refused(Op{kind, server, {}}, "without persistence");
}

TEST_CASE("SCTP is a protocol IPVS serves", "[netlink]") {
    const ServiceKey key{ip("10.96.0.9"), IPPROTO_SCTP, 3868};
    const Message msg = build(Op{OpKind::kAddService, VirtualServer{key, "rr", false, 0}, {}});
    CHECK(nested(top_attributes(msg)[0])[1] == Attribute{IPVS_SVC_ATTR_PROTOCOL, u16(132)});
}

TEST_CASE("a delete and a dump are refused for a key the kernel cannot have from switchboard",
          "[netlink]") {
    check_refused(Op{OpKind::kDeleteService,
                     VirtualServer{{ip("10.96.0.1"), IPPROTO_TCP, 0}, "rr", false, 0},
                     {}},
                  "port 0");
    auto dump = build_destination_dump(kFamily, {ip("10.96.0.1"), 0, 80});
    REQUIRE_FALSE(dump.ok());
    CHECK(dump.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("a real server of another family, port 0 or an oversized weight is never built",
          "[netlink]") {
    const VirtualServer server{kKey4, "rr", false, 0};
    for (OpKind kind :
         {OpKind::kAddDestination, OpKind::kEditDestination, OpKind::kDeleteDestination}) {
        check_refused(Op{kind, server, real_server("fd00::5", 80)},
                      "not of its virtual server's address family");
        check_refused(Op{kind, server, real_server("10.0.0.5", 0)}, "port 0");
        Op bad_key{kind, server, real_server("10.0.0.5", 80)};
        bad_key.server.key.protocol = IPPROTO_ICMP;
        check_refused(bad_key, "not TCP, UDP or SCTP");
    }
    check_refused(Op{OpKind::kAddDestination, server, real_server("10.0.0.5", 80, 0x80000000u)},
                  "weight 2147483648");
    check_refused(Op{OpKind::kEditDestination, server, real_server("10.0.0.5", 80, 0x80000000u)},
                  "weight 2147483648");
    CHECK(build_op(kFamily,
                   Op{OpKind::kAddDestination, server, real_server("10.0.0.5", 80, 0x7fffffffu)})
              .ok());
    // A delete sends no weight, so none is checked.
    CHECK(build_op(kFamily,
                   Op{OpKind::kDeleteDestination, server, real_server("10.0.0.5", 80, 0x80000000u)})
              .ok());
}

TEST_CASE("SET_CONFIG is refused with nothing to set or a timeout the kernel would wrap",
          "[netlink]") {
    auto none = build_set_config(kFamily, Timeouts{});
    REQUIRE_FALSE(none.ok());
    CHECK(none.error().code == ErrorCode::kInvalidArgument);
    auto huge = build_set_config(kFamily, Timeouts{0, 2147484, 0});
    REQUIRE_FALSE(huge.ok());
    CHECK(huge.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(huge.error().message, Catch::Contains("tcpfin"));
    CHECK(build_set_config(kFamily, Timeouts{2147483, 0, 0}).ok());
}

namespace {

// Changes to a reply's attributes: a type mapped to nullopt is left out,
// to bytes is sent with those bytes (appended when the kernel's reply has
// no such attribute).
using Changes = std::map<int, std::optional<Bytes>>;

// A reply of a listing as the kernel writes it (ip_vs_genl_fill_service,
// ip_vs_genl_fill_dest): NLM_F_MULTI, IPVS_CMD_NEW_SERVICE or _NEW_DEST,
// the object's attributes in the kernel's order nested in
// IPVS_CMD_ATTR_SERVICE or _DEST, with `changes`, then two statistics
// nests, which parsing skips.
class KernelReply {
  public:
    KernelReply(uint8_t command, int outer, const std::vector<Attribute>& attributes,
                const Changes& changes, int stats, int stats64)
        : msg_(nlmsg_alloc()) {
        REQUIRE(genlmsg_put(msg_.get(), 0, 77, kFamily, 0, NLM_F_MULTI, command,
                            IPVS_GENL_VERSION) != nullptr);
        nlattr* nest = nla_nest_start(msg_.get(), outer);
        REQUIRE(nest != nullptr);
        for (const Attribute& a : attributes) {
            const auto change = changes.find(a.type);
            if (change == changes.end()) {
                put(a.type, a.payload);
            } else if (change->second) {
                put(a.type, *change->second);
            }
        }
        for (const auto& [type, payload] : changes) {
            const bool known = std::any_of(attributes.begin(), attributes.end(),
                                           [&](const Attribute& a) { return a.type == type; });
            if (!known && payload) put(type, *payload);
        }
        for (int type : {stats, stats64}) {
            nlattr* nested_stats = nla_nest_start(msg_.get(), type);
            REQUIRE(nla_put_u32(msg_.get(), IPVS_STATS_ATTR_CONNS, 12) == 0);
            REQUIRE(nla_put_u64(msg_.get(), IPVS_STATS_ATTR_INBYTES, 4096) == 0);
            nla_nest_end(msg_.get(), nested_stats);
        }
        nla_nest_end(msg_.get(), nest);
    }
    const nlmsghdr* header() const { return nlmsg_hdr(msg_.get()); }

  private:
    void put(int type, const Bytes& payload) {
        REQUIRE(nla_put(msg_.get(), type, static_cast<int>(payload.size()), payload.data()) == 0);
    }
    Message msg_;
};

// A virtual server of `key`, scheduler wlc, persistent for 10800 s.
KernelReply service_reply(const ServiceKey& key, const Changes& changes = {}) {
    const std::vector<Attribute> attributes = {
        {IPVS_SVC_ATTR_AF, u16(key.address.is_v4() ? AF_INET : AF_INET6)},
        {IPVS_SVC_ATTR_PROTOCOL, u16(key.protocol)},
        {IPVS_SVC_ATTR_ADDR, inet_addr(key.address)},
        {IPVS_SVC_ATTR_PORT, network_port(key.port)},
        {IPVS_SVC_ATTR_SCHED_NAME, text("wlc")},
        // The kernel lists its own IP_VS_SVC_F_HASHED (0x0002) too.
        {IPVS_SVC_ATTR_FLAGS, flags(IP_VS_SVC_F_PERSISTENT | 0x0002, 0xffffffff)},
        {IPVS_SVC_ATTR_TIMEOUT, u32(10800)},
        {IPVS_SVC_ATTR_NETMASK, u32(0xffffffff)},
    };
    return KernelReply(IPVS_CMD_NEW_SERVICE, IPVS_CMD_ATTR_SERVICE, attributes, changes,
                       IPVS_SVC_ATTR_STATS, IPVS_SVC_ATTR_STATS64);
}

// A real server at `address`:`port`, weight 5, 3 active and 9 inactive
// connections.
KernelReply destination_reply(const IpAddress& address, uint16_t port,
                              const Changes& changes = {}) {
    const std::vector<Attribute> attributes = {
        {IPVS_DEST_ATTR_ADDR, inet_addr(address)},
        {IPVS_DEST_ATTR_PORT, network_port(port)},
        {IPVS_DEST_ATTR_FWD_METHOD, u32(IP_VS_CONN_F_MASQ)},
        {IPVS_DEST_ATTR_WEIGHT, u32(5)},
        {IPVS_DEST_ATTR_TUN_TYPE, Bytes{0}},
        {IPVS_DEST_ATTR_TUN_PORT, network_port(0)},
        {IPVS_DEST_ATTR_TUN_FLAGS, u16(0)},
        {IPVS_DEST_ATTR_U_THRESH, u32(0)},
        {IPVS_DEST_ATTR_L_THRESH, u32(0)},
        {IPVS_DEST_ATTR_ACTIVE_CONNS, u32(3)},
        {IPVS_DEST_ATTR_INACT_CONNS, u32(9)},
        {IPVS_DEST_ATTR_PERSIST_CONNS, u32(1)},
        {IPVS_DEST_ATTR_ADDR_FAMILY, u16(address.is_v4() ? AF_INET : AF_INET6)},
    };
    return KernelReply(IPVS_CMD_NEW_DEST, IPVS_CMD_ATTR_DEST, attributes, changes,
                       IPVS_DEST_ATTR_STATS, IPVS_DEST_ATTR_STATS64);
}

void check_malformed(const Result<std::optional<VirtualServer>>& server) {
    REQUIRE_FALSE(server.ok());
    CHECK(server.error().code == ErrorCode::kKernel);
    CHECK_THAT(server.error().message, Catch::Contains("malformed virtual server"));
}

void check_malformed(const Result<RealServer>& destination) {
    REQUIRE_FALSE(destination.ok());
    CHECK(destination.error().code == ErrorCode::kKernel);
    CHECK_THAT(destination.error().message, Catch::Contains("malformed real server"));
}

}  // namespace

TEST_CASE("a listed virtual server is parsed into its key, scheduler and persistence",
          "[netlink]") {
    const ServiceKey key = GENERATE(kKey4, kKey6);
    auto server = parse_service(service_reply(key).header());
    REQUIRE(server.ok());
    REQUIRE(server->has_value());
    CHECK(**server == VirtualServer{key, "wlc", true, 10800});
}

TEST_CASE("a listed virtual server without persistence is parsed so", "[netlink]") {
    const KernelReply reply = service_reply(kKey4, {{IPVS_SVC_ATTR_SCHED_NAME, text("rr")},
                                                    {IPVS_SVC_ATTR_FLAGS, flags(0x0002, ~0u)},
                                                    {IPVS_SVC_ATTR_TIMEOUT, u32(0)}});
    auto server = parse_service(reply.header());
    REQUIRE(server.ok());
    REQUIRE(server->has_value());
    CHECK(**server == VirtualServer{kKey4, "rr", false, 0});
}

TEST_CASE("virtual servers switchboard cannot name are skipped, not errors", "[netlink]") {
    SECTION("a firewall-mark one has no address") {
        const KernelReply reply = service_reply(kKey4, {{IPVS_SVC_ATTR_PROTOCOL, std::nullopt},
                                                        {IPVS_SVC_ATTR_ADDR, std::nullopt},
                                                        {IPVS_SVC_ATTR_PORT, std::nullopt},
                                                        {IPVS_SVC_ATTR_FWMARK, u32(5)}});
        auto server = parse_service(reply.header());
        REQUIRE(server.ok());
        CHECK_FALSE(server->has_value());
    }
    SECTION("one of another protocol") {
        auto server = parse_service(service_reply({ip("10.0.0.1"), IPPROTO_AH, 80}).header());
        REQUIRE(server.ok());
        CHECK_FALSE(server->has_value());
    }
    SECTION("one of port 0 (every port)") {
        auto server = parse_service(service_reply({ip("10.0.0.1"), IPPROTO_TCP, 0}).header());
        REQUIRE(server.ok());
        CHECK_FALSE(server->has_value());
    }
}

TEST_CASE("a listed virtual server missing a required attribute is an error", "[netlink]") {
    const int missing = GENERATE(as<int>{}, IPVS_SVC_ATTR_AF, IPVS_SVC_ATTR_PROTOCOL,
                                 IPVS_SVC_ATTR_ADDR, IPVS_SVC_ATTR_PORT, IPVS_SVC_ATTR_SCHED_NAME,
                                 IPVS_SVC_ATTR_FLAGS, IPVS_SVC_ATTR_TIMEOUT);
    check_malformed(parse_service(service_reply(kKey4, {{missing, std::nullopt}}).header()));
}

TEST_CASE("a listed virtual server with a short or unterminated attribute is an error",
          "[netlink]") {
    const Changes change = GENERATE(
        // The kernel always sends the 16 bytes of union nf_inet_addr.
        Changes{{IPVS_SVC_ATTR_ADDR, Bytes{10, 96, 0, 1}}},
        Changes{{IPVS_SVC_ATTR_PORT, Bytes{0x01}}}, Changes{{IPVS_SVC_ATTR_AF, Bytes{AF_INET}}},
        // Flags without their mask.
        Changes{{IPVS_SVC_ATTR_FLAGS, u32(0)}}, Changes{{IPVS_SVC_ATTR_TIMEOUT, u16(0)}},
        Changes{{IPVS_SVC_ATTR_SCHED_NAME, Bytes{'r', 'r'}}});
    check_malformed(parse_service(service_reply(kKey4, change).header()));
}

TEST_CASE("a listed virtual server of an unknown address family is an error", "[netlink]") {
    check_malformed(
        parse_service(service_reply(kKey4, {{IPVS_SVC_ATTR_AF, u16(AF_UNIX)}}).header()));
}

TEST_CASE("a truncated listing reply is an error, never read past its length", "[netlink]") {
    const KernelReply reply = service_reply(kKey4);
    const nlmsghdr* whole = reply.header();
    REQUIRE(parse_service(whole).ok());
    // A copy whose length cuts into the nested service attribute, and one
    // cut inside the generic-netlink header.
    for (uint32_t length : {whole->nlmsg_len - 8, static_cast<uint32_t>(NLMSG_HDRLEN + 2)}) {
        Bytes copy(reinterpret_cast<const uint8_t*>(whole),
                   reinterpret_cast<const uint8_t*>(whole) + whole->nlmsg_len);
        auto* cut = reinterpret_cast<nlmsghdr*>(copy.data());
        cut->nlmsg_len = length;
        check_malformed(parse_service(cut));
    }
}

TEST_CASE("a reply of another command is not taken for a virtual server or a real server",
          "[netlink]") {
    check_malformed(parse_service(destination_reply(ip("10.0.0.5"), 80).header()));
    check_malformed(parse_destination(service_reply(kKey4).header(), IpFamily::kV4));
}

TEST_CASE("a listed real server is parsed with its weight and connection counts", "[netlink]") {
    const IpAddress address = ip(GENERATE("10.244.1.7", "fd00:244::7"));
    // Without IPVS_DEST_ATTR_ADDR_FAMILY (kernels before 4.x), the real
    // server has its virtual server's family.
    const Changes changes =
        GENERATE(Changes{}, Changes{{IPVS_DEST_ATTR_ADDR_FAMILY, std::nullopt}});
    auto destination =
        parse_destination(destination_reply(address, 8443, changes).header(), address.family());
    REQUIRE(destination.ok());
    CHECK(destination->address == address);
    CHECK(destination->port == 8443);
    CHECK(destination->weight == 5);
    CHECK(destination->active_connections == 3);
    CHECK(destination->inactive_connections == 9);
}

TEST_CASE("a listed real server's own address family wins over its virtual server's", "[netlink]") {
    auto destination =
        parse_destination(destination_reply(ip("10.0.0.5"), 80).header(), IpFamily::kV6);
    REQUIRE(destination.ok());
    CHECK(destination->address == ip("10.0.0.5"));
}

TEST_CASE("a listed real server missing a required attribute is an error", "[netlink]") {
    const int missing =
        GENERATE(as<int>{}, IPVS_DEST_ATTR_ADDR, IPVS_DEST_ATTR_PORT, IPVS_DEST_ATTR_WEIGHT,
                 IPVS_DEST_ATTR_ACTIVE_CONNS, IPVS_DEST_ATTR_INACT_CONNS);
    check_malformed(parse_destination(
        destination_reply(ip("10.0.0.5"), 80, {{missing, std::nullopt}}).header(), IpFamily::kV4));
}

TEST_CASE("a listed real server with a short attribute or an unknown family is an error",
          "[netlink]") {
    const Changes change =
        GENERATE(Changes{{IPVS_DEST_ATTR_ADDR, Bytes{10, 0, 0, 5}}},
                 Changes{{IPVS_DEST_ATTR_PORT, Bytes{0}}}, Changes{{IPVS_DEST_ATTR_WEIGHT, u16(1)}},
                 Changes{{IPVS_DEST_ATTR_ACTIVE_CONNS, Bytes{}}},
                 Changes{{IPVS_DEST_ATTR_ADDR_FAMILY, u16(AF_UNIX)}});
    check_malformed(
        parse_destination(destination_reply(ip("10.0.0.5"), 80, change).header(), IpFamily::kV4));
}
