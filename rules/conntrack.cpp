#include "rules/conntrack.h"

#include "rules/port_changes.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace sb::rules {

namespace {

std::set<std::pair<IpAddress, uint16_t>> endpoint_set(const ServicePortPlan& port) {
    std::set<std::pair<IpAddress, uint16_t>> out;
    for (const auto* list : {&port.cluster_endpoints, &port.local_endpoints}) {
        for (const Endpoint& e : *list) out.emplace(e.ip, e.port);
    }
    return out;
}

}  // namespace

std::vector<ConntrackFilter> stale_udp_conntrack(const Plan& previous, const Plan& plan) {
    const auto changed = changed_ports(previous, plan);
    return changed ? stale_udp_conntrack(*changed) : std::vector<ConntrackFilter>{};
}

std::vector<ConntrackFilter> stale_udp_conntrack(
    const std::vector<std::pair<const ServicePortPlan*, const ServicePortPlan*>>& changed) {
    std::set<ConntrackFilter> out;
    for (const auto& [old, now] : changed) {
        if (old && old->protocol == Protocol::kUDP) {
            const auto kept = now ? endpoint_set(*now) : decltype(endpoint_set(*old)){};
            for (const auto& [ip, port] : endpoint_set(*old)) {
                if (!kept.count({ip, port})) {
                    out.insert({ConntrackFilter::Kind::kReplySource, ip, port});
                }
            }
        }
        if (!now || now->protocol != Protocol::kUDP || now->cluster_endpoints.empty()) continue;
        if (old && !old->cluster_endpoints.empty()) continue;
        for (const auto* list : {&now->cluster_ips, &now->external_ips, &now->load_balancer_ips}) {
            for (const IpAddress& ip : *list) {
                out.insert({ConntrackFilter::Kind::kOrigDest, ip, now->port});
            }
        }
        if (now->node_port != 0) {
            out.insert({ConntrackFilter::Kind::kOrigDestPort, IpAddress(), now->node_port});
        }
    }
    return {out.begin(), out.end()};
}

namespace {

struct DumpState {
    const std::vector<ConntrackFilter>* filters;
    std::vector<nf_conntrack*> doomed;
};

IpAddress address_of(const nf_conntrack* ct, bool v4, enum nf_conntrack_attr attr4,
                     enum nf_conntrack_attr attr6) {
    const void* p = nfct_get_attr(ct, v4 ? attr4 : attr6);
    if (!p) return IpAddress();
    return IpAddress::from_bytes(v4 ? IpFamily::kV4 : IpFamily::kV6,
                                 static_cast<const uint8_t*>(p));
}

int on_entry(enum nf_conntrack_msg_type, nf_conntrack* ct, void* data) {
    auto* state = static_cast<DumpState*>(data);
    if (nfct_get_attr_u8(ct, ATTR_ORIG_L4PROTO) != IPPROTO_UDP) return NFCT_CB_CONTINUE;
    const uint8_t l3 = nfct_get_attr_u8(ct, ATTR_ORIG_L3PROTO);
    if (l3 != AF_INET && l3 != AF_INET6) return NFCT_CB_CONTINUE;
    const bool v4 = l3 == AF_INET;
    const IpAddress reply_src = address_of(ct, v4, ATTR_REPL_IPV4_SRC, ATTR_REPL_IPV6_SRC);
    const IpAddress orig_dst = address_of(ct, v4, ATTR_ORIG_IPV4_DST, ATTR_ORIG_IPV6_DST);
    const uint16_t reply_sport = ntohs(nfct_get_attr_u16(ct, ATTR_REPL_PORT_SRC));
    const uint16_t orig_dport = ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_DST));
    for (const ConntrackFilter& f : *state->filters) {
        bool match = false;
        switch (f.kind) {
            case ConntrackFilter::Kind::kReplySource:
                match = reply_src == f.ip && reply_sport == f.port;
                break;
            case ConntrackFilter::Kind::kOrigDest:
                match = orig_dst == f.ip && orig_dport == f.port;
                break;
            case ConntrackFilter::Kind::kOrigDestPort:
                match = orig_dport == f.port;
                break;
        }
        if (match) {
            state->doomed.push_back(nfct_clone(ct));
            break;
        }
    }
    return NFCT_CB_CONTINUE;
}

}  // namespace

Result<size_t> delete_udp_conntrack(const std::vector<ConntrackFilter>& filters) {
    if (filters.empty()) return size_t{0};
    nfct_handle* h = nfct_open(CONNTRACK, 0);
    if (!h) return make_error(ErrorCode::kKernel, "conntrack: open netlink handle", errno);
    DumpState state{&filters, {}};
    nfct_callback_register(h, NFCT_T_ALL, on_entry, &state);
    uint32_t family = AF_UNSPEC;
    const int dumped = nfct_query(h, NFCT_Q_DUMP, &family);
    const int dump_errno = errno;
    nfct_callback_unregister(h);
    size_t deleted = 0;
    for (nf_conntrack* ct : state.doomed) {
        // ENOENT: it expired meanwhile, which is what we wanted.
        if (nfct_query(h, NFCT_Q_DESTROY, ct) == 0) ++deleted;
        nfct_destroy(ct);
    }
    nfct_close(h);
    if (dumped < 0) return make_error(ErrorCode::kKernel, "conntrack: dump", dump_errno);
    return deleted;
}

}  // namespace sb::rules
