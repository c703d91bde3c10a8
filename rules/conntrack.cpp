#include "rules/conntrack.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>

namespace sb::rules {

UdpServiceTargets::UdpServiceTargets(const Plan& plan) {
    for (const ServicePortPlan& port : plan.services) {
        if (port.protocol != Protocol::kUDP) continue;
        EndpointSet endpoints;
        for (const auto* list : {&port.cluster_endpoints, &port.local_endpoints}) {
            for (const Endpoint& e : *list) endpoints.emplace(e.ip, e.port);
        }
        if (endpoints.empty()) continue;
        // Two ports sharing an address (external IPs are not unique in the
        // API) keep the flows of either's endpoints.
        for (const auto* list : {&port.cluster_ips, &port.external_ips, &port.load_balancer_ips}) {
            for (const IpAddress& ip : *list) {
                by_address_[{ip, port.port}].insert(endpoints.begin(), endpoints.end());
            }
        }
        if (port.node_port != 0) {
            by_node_port_[port.node_port].insert(endpoints.begin(), endpoints.end());
        }
    }
}

bool UdpServiceTargets::stale(const UdpFlow& flow) const {
    const std::pair<IpAddress, uint16_t> reply{flow.reply_src, flow.reply_sport};
    if (auto it = by_address_.find({flow.orig_dst, flow.orig_dport}); it != by_address_.end()) {
        if (!it->second.count(reply)) return true;
    }
    if (auto it = by_node_port_.find(flow.orig_dport); it != by_node_port_.end()) {
        if (!it->second.count(reply)) return true;
    }
    return false;
}

bool UdpServiceTargets::tracks(IpFamily family) const {
    if (!by_node_port_.empty()) return true;
    for (const auto& [address, endpoints] : by_address_) {
        if (address.first.family() == family) return true;
    }
    return false;
}

namespace {

struct DumpState {
    const UdpServiceTargets* targets;
    bool v4;
    std::vector<nf_conntrack*> doomed;  // owned: nfct_destroy each
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
    const bool v4 = state->v4;
    UdpFlow flow;
    flow.orig_dst = address_of(ct, v4, ATTR_ORIG_IPV4_DST, ATTR_ORIG_IPV6_DST);
    flow.orig_dport = ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_DST));
    flow.reply_src = address_of(ct, v4, ATTR_REPL_IPV4_SRC, ATTR_REPL_IPV6_SRC);
    flow.reply_sport = ntohs(nfct_get_attr_u16(ct, ATTR_REPL_PORT_SRC));
    if (state->targets->stale(flow)) state->doomed.push_back(nfct_clone(ct));
    return NFCT_CB_CONTINUE;
}

std::string describe(const char* what, int err) {
    return std::string("conntrack: ") + what + ": " + std::strerror(err);
}

// Dumps one family's entries and deletes the stale UDP ones.
void reconcile_family(const UdpServiceTargets& targets, ConntrackReconcile& out) {
    const bool v4 = out.family == IpFamily::kV4;
    out.dumped = true;
    nfct_handle* h = nfct_open(CONNTRACK, 0);
    if (!h) {
        out.ok = false;
        out.error = describe("open a netlink handle", errno);
        return;
    }
    nfct_filter_dump* filter = nfct_filter_dump_create();
    if (!filter) {
        nfct_close(h);
        out.ok = false;
        out.error = describe("allocate a dump filter", ENOMEM);
        return;
    }
    nfct_filter_dump_set_attr_u8(filter, NFCT_FILTER_DUMP_L3NUM, v4 ? AF_INET : AF_INET6);
    DumpState state{&targets, v4, {}};
    nfct_callback_register(h, NFCT_T_ALL, on_entry, &state);
    const bool listed = nfct_query(h, NFCT_Q_DUMP_FILTER, filter) == 0;
    const int dump_errno = errno;
    nfct_callback_unregister(h);
    nfct_filter_dump_destroy(filter);
    // The entries found before a failed dump are stale all the same.
    int delete_errno = 0;
    for (nf_conntrack* ct : state.doomed) {
        if (nfct_query(h, NFCT_Q_DESTROY, ct) == 0) {
            ++out.deleted;
        } else if (errno != ENOENT && delete_errno == 0) {
            delete_errno = errno;  // ENOENT: it expired meanwhile, as wanted
        }
        nfct_destroy(ct);
    }
    nfct_close(h);
    if (!listed) {
        out.ok = false;
        out.error = describe("dump", dump_errno);
    } else if (delete_errno != 0) {
        out.ok = false;
        out.error = describe("delete", delete_errno);
    }
}

}  // namespace

std::vector<ConntrackReconcile> reconcile_udp_conntrack(const Plan& plan) {
    const UdpServiceTargets targets(plan);
    std::vector<ConntrackReconcile> out;
    for (const IpFamily family : {IpFamily::kV4, IpFamily::kV6}) {
        ConntrackReconcile& r = out.emplace_back();
        r.family = family;
        if (!targets.tracks(family)) continue;
        const auto started = std::chrono::steady_clock::now();
        reconcile_family(targets, r);
        r.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    return out;
}

}  // namespace sb::rules
