#include "rules/ipvs/netlink_messages.h"

#include <arpa/inet.h>
#include <linux/ip_vs.h>
#include <netinet/in.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <climits>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace sb::rules::ipvs {

static_assert(kPersistentFlag == IP_VS_SVC_F_PERSISTENT);
static_assert(kForwardMasquerade == IP_VS_CONN_F_MASQ);

void MessageFree::operator()(nl_msg* msg) const {
    nlmsg_free(msg);
}

namespace {

constexpr std::array<std::string_view, 10> kSchedulers = {"rr", "lc",  "dh",  "sh",   "sed",
                                                          "nq", "wrr", "wlc", "lblc", "lblcr"};
// Kubernetes' bound on sessionAffinityConfig.clientIP.timeoutSeconds.
constexpr uint32_t kMaxPersistenceSeconds = 86400;
// The kernel keeps the connection timeouts as an int of jiffies (HZ at most
// 1000): a larger value would wrap.
constexpr uint32_t kMaxConfigTimeoutSeconds = INT_MAX / 1000;
// The size of union nf_inet_addr, as IPVS_SVC_ATTR_ADDR and
// IPVS_DEST_ATTR_ADDR carry it in both directions.
constexpr size_t kInetAddrSize = 16;

// "TCP" / "UDP" / "SCTP"; nullptr for a protocol IPVS backends do not use.
const char* protocol_text(uint64_t protocol) {
    if (protocol != IPPROTO_TCP && protocol != IPPROTO_UDP && protocol != IPPROTO_SCTP) {
        return nullptr;
    }
    return protocol_name(static_cast<uint8_t>(protocol));
}

Error invalid(const std::string& message) {
    return make_error(ErrorCode::kInvalidArgument, fmt::format("ipvs: {}", message));
}

Status validate_key(const ServiceKey& key) {
    if (!protocol_text(key.protocol)) {
        return invalid(fmt::format("virtual server {}: the protocol is not TCP, UDP or SCTP",
                                   service_text(key)));
    }
    if (key.port == 0) return invalid(fmt::format("virtual server {}: port 0", service_text(key)));
    return {};
}

Status validate_service(const VirtualServer& server) {
    if (Status s = validate_key(server.key); !s) return s;
    if (std::find(kSchedulers.begin(), kSchedulers.end(), server.scheduler) == kSchedulers.end()) {
        return invalid(fmt::format("virtual server {}: unknown scheduler \"{}\"",
                                   service_text(server.key), server.scheduler));
    }
    if (server.persistent &&
        (server.timeout_seconds == 0 || server.timeout_seconds > kMaxPersistenceSeconds)) {
        return invalid(fmt::format("virtual server {}: a persistence timeout of {} s, not 1-{}",
                                   service_text(server.key), server.timeout_seconds,
                                   kMaxPersistenceSeconds));
    }
    if (!server.persistent && server.timeout_seconds != 0) {
        return invalid(fmt::format("virtual server {}: a timeout of {} s without persistence",
                                   service_text(server.key), server.timeout_seconds));
    }
    return {};
}

Status validate_destination(const ServiceKey& key, const RealServer& destination,
                            bool with_weight) {
    const std::string where = fmt::format(
        "real server {} of {}", HostPort{destination.address, destination.port}, service_text(key));
    if (destination.address.family() != key.address.family()) {
        return invalid(fmt::format("{}: not of its virtual server's address family", where));
    }
    if (destination.port == 0) return invalid(fmt::format("{}: port 0", where));
    if (with_weight && destination.weight > static_cast<uint32_t>(INT32_MAX)) {
        return invalid(
            fmt::format("{}: weight {} is above {}", where, destination.weight, INT32_MAX));
    }
    return {};
}

Status validate(const Op& op) {
    switch (op.kind) {
        case OpKind::kAddService:
        case OpKind::kEditService:
            return validate_service(op.server);
        case OpKind::kDeleteService:
            return validate_key(op.server.key);
        case OpKind::kAddDestination:
        case OpKind::kEditDestination:
        case OpKind::kDeleteDestination: {
            if (Status s = validate_key(op.server.key); !s) return s;
            return validate_destination(op.server.key, op.destination,
                                        op.kind != OpKind::kDeleteDestination);
        }
    }
    return invalid("an operation of unknown kind");
}

uint16_t address_family(const IpAddress& address) {
    return address.is_v4() ? AF_INET : AF_INET6;
}

std::array<uint8_t, kInetAddrSize> inet_addr(const IpAddress& address) {
    std::array<uint8_t, kInetAddrSize> out{};
    std::copy_n(address.bytes(), address.size(), out.begin());
    return out;
}

// Appends attributes to one message and remembers whether any did not fit.
class AttributeWriter {
  public:
    explicit AttributeWriter(nl_msg* msg) : msg_(msg) {}

    void u16(int type, uint16_t value) { note(nla_put_u16(msg_, type, value)); }
    void u32(int type, uint32_t value) { note(nla_put_u32(msg_, type, value)); }
    void string(int type, const std::string& value) {
        note(nla_put_string(msg_, type, value.c_str()));
    }
    void bytes(int type, const void* data, size_t size) {
        note(nla_put(msg_, type, static_cast<int>(size), data));
    }
    // Appends the attributes `fill` writes inside a nested attribute `type`.
    template <typename Fill>
    void nest(int type, Fill fill) {
        nlattr* nest = nla_nest_start(msg_, type);
        if (!nest) {
            failed_ = true;
            return;
        }
        fill();
        note(nla_nest_end(msg_, nest));
    }
    bool failed() const { return failed_; }

  private:
    void note(int result) { failed_ = failed_ || result < 0; }
    nl_msg* msg_;
    bool failed_ = false;
};

void put_key(AttributeWriter& out, const ServiceKey& key) {
    const auto address = inet_addr(key.address);
    out.u16(IPVS_SVC_ATTR_AF, address_family(key.address));
    out.u16(IPVS_SVC_ATTR_PROTOCOL, key.protocol);
    out.bytes(IPVS_SVC_ATTR_ADDR, address.data(), address.size());
    out.u16(IPVS_SVC_ATTR_PORT, htons(key.port));
}

void put_service(AttributeWriter& out, const VirtualServer& server) {
    put_key(out, server.key);
    out.string(IPVS_SVC_ATTR_SCHED_NAME, server.scheduler);
    // The mask covers every flag, so an edit also turns persistence off.
    const ip_vs_flags flags{server.persistent ? kPersistentFlag : 0u, ~0u};
    out.bytes(IPVS_SVC_ATTR_FLAGS, &flags, sizeof flags);
    out.u32(IPVS_SVC_ATTR_TIMEOUT, server.timeout_seconds);
    // The persistence granularity: one client address (a /32 mask for IPv4,
    // a prefix length for IPv6, which the kernel requires to be 1-128).
    out.u32(IPVS_SVC_ATTR_NETMASK, server.key.address.is_v4() ? 0xffffffffu : 128u);
}

void put_destination(AttributeWriter& out, const RealServer& destination, bool full) {
    const auto address = inet_addr(destination.address);
    out.bytes(IPVS_DEST_ATTR_ADDR, address.data(), address.size());
    out.u16(IPVS_DEST_ATTR_PORT, htons(destination.port));
    if (full) {
        out.u32(IPVS_DEST_ATTR_FWD_METHOD, kForwardMasquerade);
        out.u32(IPVS_DEST_ATTR_WEIGHT, destination.weight);
        out.u32(IPVS_DEST_ATTR_U_THRESH, 0);
        out.u32(IPVS_DEST_ATTR_L_THRESH, 0);
    }
    out.u16(IPVS_DEST_ATTR_ADDR_FAMILY, address_family(destination.address));
}

// A message of `command` with no attributes yet.
Result<Message> start(int family, uint8_t command, int flags) {
    Message msg(nlmsg_alloc());
    if (!msg) return make_error(ErrorCode::kInternal, "ipvs: out of memory");
    if (!genlmsg_put(msg.get(), NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, flags, command,
                     IPVS_GENL_VERSION)) {
        return make_error(ErrorCode::kInternal, "ipvs: no room for a generic netlink header");
    }
    return msg;
}

Result<Message> finish(Message msg, const AttributeWriter& out) {
    if (out.failed()) {
        return make_error(ErrorCode::kInternal, "ipvs: a request does not fit in one message");
    }
    return msg;
}

constexpr int kRequestFlags = NLM_F_REQUEST | NLM_F_ACK;
constexpr int kDumpFlags = NLM_F_REQUEST | NLM_F_DUMP;

uint8_t command_of(OpKind kind) {
    switch (kind) {
        case OpKind::kAddService:
            return IPVS_CMD_NEW_SERVICE;
        case OpKind::kEditService:
            return IPVS_CMD_SET_SERVICE;
        case OpKind::kDeleteService:
            return IPVS_CMD_DEL_SERVICE;
        case OpKind::kAddDestination:
            return IPVS_CMD_NEW_DEST;
        case OpKind::kEditDestination:
            return IPVS_CMD_SET_DEST;
        case OpKind::kDeleteDestination:
            return IPVS_CMD_DEL_DEST;
    }
    return IPVS_CMD_UNSPEC;
}

// libnl's parse functions take non-const pointers; they only read.
nlmsghdr* readable(const nlmsghdr* reply) {
    return const_cast<nlmsghdr*>(reply);
}

Error malformed(const std::string& what) {
    return make_error(ErrorCode::kKernel,
                      fmt::format("ipvs: a malformed {} in the kernel's listing", what));
}

template <size_t N>
struct Policy {
    std::array<nla_policy, N> rules{};
    Policy& expect(int type, uint16_t nla_type, uint16_t minlen = 0, uint16_t maxlen = 0) {
        rules[static_cast<size_t>(type)] = nla_policy{nla_type, minlen, maxlen};
        return *this;
    }
};

const nla_policy* command_policy() {
    static const Policy<IPVS_CMD_ATTR_MAX + 1> policy =
        Policy<IPVS_CMD_ATTR_MAX + 1>()
            .expect(IPVS_CMD_ATTR_SERVICE, NLA_NESTED)
            .expect(IPVS_CMD_ATTR_DEST, NLA_NESTED);
    return policy.rules.data();
}

const nla_policy* service_policy() {
    static const Policy<IPVS_SVC_ATTR_MAX + 1> policy =
        Policy<IPVS_SVC_ATTR_MAX + 1>()
            .expect(IPVS_SVC_ATTR_AF, NLA_U16)
            .expect(IPVS_SVC_ATTR_PROTOCOL, NLA_U16)
            .expect(IPVS_SVC_ATTR_ADDR, NLA_UNSPEC, kInetAddrSize)
            .expect(IPVS_SVC_ATTR_PORT, NLA_U16)
            .expect(IPVS_SVC_ATTR_FWMARK, NLA_U32)
            .expect(IPVS_SVC_ATTR_SCHED_NAME, NLA_STRING, 0, IP_VS_SCHEDNAME_MAXLEN)
            .expect(IPVS_SVC_ATTR_FLAGS, NLA_UNSPEC, sizeof(ip_vs_flags))
            .expect(IPVS_SVC_ATTR_TIMEOUT, NLA_U32);
    return policy.rules.data();
}

const nla_policy* destination_policy() {
    static const Policy<IPVS_DEST_ATTR_MAX + 1> policy =
        Policy<IPVS_DEST_ATTR_MAX + 1>()
            .expect(IPVS_DEST_ATTR_ADDR, NLA_UNSPEC, kInetAddrSize)
            .expect(IPVS_DEST_ATTR_PORT, NLA_U16)
            .expect(IPVS_DEST_ATTR_WEIGHT, NLA_U32)
            .expect(IPVS_DEST_ATTR_ACTIVE_CONNS, NLA_U32)
            .expect(IPVS_DEST_ATTR_INACT_CONNS, NLA_U32)
            .expect(IPVS_DEST_ATTR_ADDR_FAMILY, NLA_U16);
    return policy.rules.data();
}

// The attributes nested in the reply's IPVS_CMD_ATTR_SERVICE or _DEST
// (`outer`), or false when the reply is not a `command` carrying them.
template <size_t N>
bool parse_nested(const nlmsghdr* reply, uint8_t command, int outer, const nla_policy* policy,
                  std::array<nlattr*, N>& attrs) {
    std::array<nlattr*, IPVS_CMD_ATTR_MAX + 1> top{};
    if (genlmsg_parse(readable(reply), 0, top.data(), IPVS_CMD_ATTR_MAX, command_policy()) < 0) {
        return false;
    }
    const auto* header = static_cast<const genlmsghdr*>(nlmsg_data(reply));
    if (header->cmd != command || !top[static_cast<size_t>(outer)]) return false;
    return nla_parse_nested(attrs.data(), static_cast<int>(N - 1), top[static_cast<size_t>(outer)],
                            policy) >= 0;
}

std::optional<IpFamily> family_of(uint16_t af) {
    if (af == AF_INET) return IpFamily::kV4;
    if (af == AF_INET6) return IpFamily::kV6;
    return std::nullopt;
}

}  // namespace

std::string service_text(const ServiceKey& key) {
    const char* protocol = protocol_text(key.protocol);
    return fmt::format("{} {}", protocol ? protocol : fmt::format("protocol {}", key.protocol),
                       HostPort{key.address, key.port});
}

Result<Message> build_op(int family, const Op& op) {
    if (Status s = validate(op); !s) return s.error();
    auto msg = start(family, command_of(op.kind), kRequestFlags);
    if (!msg) return msg.error();
    AttributeWriter out(msg->get());
    const bool full_service = op.kind == OpKind::kAddService || op.kind == OpKind::kEditService;
    out.nest(IPVS_CMD_ATTR_SERVICE, [&] {
        if (full_service) {
            put_service(out, op.server);
        } else {
            put_key(out, op.server.key);
        }
    });
    if (op.kind == OpKind::kAddDestination || op.kind == OpKind::kEditDestination ||
        op.kind == OpKind::kDeleteDestination) {
        out.nest(IPVS_CMD_ATTR_DEST, [&] {
            put_destination(out, op.destination, op.kind != OpKind::kDeleteDestination);
        });
    }
    return finish(std::move(*msg), out);
}

Result<Message> build_service_dump(int family) {
    return start(family, IPVS_CMD_GET_SERVICE, kDumpFlags);
}

Result<Message> build_destination_dump(int family, const ServiceKey& key) {
    if (Status s = validate_key(key); !s) return s.error();
    auto msg = start(family, IPVS_CMD_GET_DEST, kDumpFlags);
    if (!msg) return msg.error();
    AttributeWriter out(msg->get());
    out.nest(IPVS_CMD_ATTR_SERVICE, [&] { put_key(out, key); });
    return finish(std::move(*msg), out);
}

Result<Message> build_set_config(int family, const Timeouts& timeouts) {
    if (timeouts == Timeouts{}) return invalid("connection timeouts: all 0, nothing to set");
    const std::array<std::pair<const char*, uint32_t>, 3> values = {{
        {"tcp", timeouts.tcp_seconds},
        {"tcpfin", timeouts.tcp_fin_seconds},
        {"udp", timeouts.udp_seconds},
    }};
    for (const auto& [name, seconds] : values) {
        if (seconds > kMaxConfigTimeoutSeconds) {
            return invalid(fmt::format("the {} connection timeout of {} s is above {} s", name,
                                       seconds, kMaxConfigTimeoutSeconds));
        }
    }
    auto msg = start(family, IPVS_CMD_SET_CONFIG, kRequestFlags);
    if (!msg) return msg.error();
    AttributeWriter out(msg->get());
    // An absent attribute leaves that timeout as the kernel has it.
    if (timeouts.tcp_seconds) out.u32(IPVS_CMD_ATTR_TIMEOUT_TCP, timeouts.tcp_seconds);
    if (timeouts.tcp_fin_seconds) out.u32(IPVS_CMD_ATTR_TIMEOUT_TCP_FIN, timeouts.tcp_fin_seconds);
    if (timeouts.udp_seconds) out.u32(IPVS_CMD_ATTR_TIMEOUT_UDP, timeouts.udp_seconds);
    return finish(std::move(*msg), out);
}

Result<std::optional<VirtualServer>> parse_service(const nlmsghdr* reply) {
    std::array<nlattr*, IPVS_SVC_ATTR_MAX + 1> a{};
    if (!parse_nested(reply, IPVS_CMD_NEW_SERVICE, IPVS_CMD_ATTR_SERVICE, service_policy(), a)) {
        return malformed("virtual server");
    }
    if (a[IPVS_SVC_ATTR_FWMARK] && nla_get_u32(a[IPVS_SVC_ATTR_FWMARK]) != 0) {
        return std::optional<VirtualServer>();
    }
    for (int required :
         {IPVS_SVC_ATTR_AF, IPVS_SVC_ATTR_PROTOCOL, IPVS_SVC_ATTR_ADDR, IPVS_SVC_ATTR_PORT,
          IPVS_SVC_ATTR_SCHED_NAME, IPVS_SVC_ATTR_FLAGS, IPVS_SVC_ATTR_TIMEOUT}) {
        if (!a[static_cast<size_t>(required)]) {
            return malformed(fmt::format("virtual server (no attribute {})", required));
        }
    }
    const auto family = family_of(nla_get_u16(a[IPVS_SVC_ATTR_AF]));
    if (!family) return malformed("virtual server (an address family other than IPv4 and IPv6)");
    const uint16_t protocol = nla_get_u16(a[IPVS_SVC_ATTR_PROTOCOL]);
    const uint16_t port = ntohs(nla_get_u16(a[IPVS_SVC_ATTR_PORT]));
    if (!protocol_text(protocol) || port == 0) return std::optional<VirtualServer>();
    VirtualServer server;
    server.key.address = IpAddress::from_bytes(
        *family, static_cast<const uint8_t*>(nla_data(a[IPVS_SVC_ATTR_ADDR])));
    server.key.protocol = static_cast<uint8_t>(protocol);
    server.key.port = port;
    server.scheduler = nla_get_string(a[IPVS_SVC_ATTR_SCHED_NAME]);
    ip_vs_flags flags{};
    nla_memcpy(&flags, a[IPVS_SVC_ATTR_FLAGS], sizeof flags);
    server.persistent = (flags.flags & kPersistentFlag) != 0;
    server.timeout_seconds = nla_get_u32(a[IPVS_SVC_ATTR_TIMEOUT]);
    return std::optional<VirtualServer>(std::move(server));
}

Result<RealServer> parse_destination(const nlmsghdr* reply, IpFamily service_family) {
    std::array<nlattr*, IPVS_DEST_ATTR_MAX + 1> a{};
    if (!parse_nested(reply, IPVS_CMD_NEW_DEST, IPVS_CMD_ATTR_DEST, destination_policy(), a)) {
        return malformed("real server");
    }
    for (int required : {IPVS_DEST_ATTR_ADDR, IPVS_DEST_ATTR_PORT, IPVS_DEST_ATTR_WEIGHT,
                         IPVS_DEST_ATTR_ACTIVE_CONNS, IPVS_DEST_ATTR_INACT_CONNS}) {
        if (!a[static_cast<size_t>(required)]) {
            return malformed(fmt::format("real server (no attribute {})", required));
        }
    }
    std::optional<IpFamily> family = service_family;
    if (a[IPVS_DEST_ATTR_ADDR_FAMILY]) {
        family = family_of(nla_get_u16(a[IPVS_DEST_ATTR_ADDR_FAMILY]));
        if (!family) return malformed("real server (an address family other than IPv4 and IPv6)");
    }
    RealServer destination;
    destination.address = IpAddress::from_bytes(
        *family, static_cast<const uint8_t*>(nla_data(a[IPVS_DEST_ATTR_ADDR])));
    destination.port = ntohs(nla_get_u16(a[IPVS_DEST_ATTR_PORT]));
    destination.weight = nla_get_u32(a[IPVS_DEST_ATTR_WEIGHT]);
    destination.active_connections = nla_get_u32(a[IPVS_DEST_ATTR_ACTIVE_CONNS]);
    destination.inactive_connections = nla_get_u32(a[IPVS_DEST_ATTR_INACT_CONNS]);
    return destination;
}

}  // namespace sb::rules::ipvs
