#include "rules/kernel/conntrack_kernel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_conntrack/libnetfilter_conntrack.h>
#include <netinet/in.h>

namespace sb::rules {

namespace {

Error failure(const char* what, int err) {
    return make_error(ErrorCode::kKernel, what, err);
}

// A netlink handle for conntrack queries, closed on scope exit.
class Handle {
  public:
    Handle() : h_(nfct_open(CONNTRACK, 0)) {}
    ~Handle() {
        if (h_) nfct_close(h_);
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    nfct_handle* get() const { return h_; }

  private:
    nfct_handle* h_;
};

struct DumpState {
    bool v4;
    std::vector<UdpFlow>* out;
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
    flow.orig_src = address_of(ct, v4, ATTR_ORIG_IPV4_SRC, ATTR_ORIG_IPV6_SRC);
    flow.orig_sport = ntohs(nfct_get_attr_u16(ct, ATTR_ORIG_PORT_SRC));
    if (nfct_attr_is_set(ct, ATTR_ZONE) > 0) flow.zone = nfct_get_attr_u16(ct, ATTR_ZONE);
    if (nfct_attr_is_set(ct, ATTR_ID) > 0) flow.id = nfct_get_attr_u32(ct, ATTR_ID);
    state->out->push_back(flow);
    return NFCT_CB_CONTINUE;
}

// An nf_conntrack naming `flow` as the kernel matches a deletion.
class Query {
  public:
    Query(IpFamily family, const UdpFlow& flow) : ct_(nfct_new()) {
        if (!ct_) return;
        const bool v4 = family == IpFamily::kV4;
        nfct_set_attr_u8(ct_, ATTR_L3PROTO, v4 ? AF_INET : AF_INET6);
        nfct_set_attr(ct_, v4 ? ATTR_IPV4_SRC : ATTR_IPV6_SRC, flow.orig_src.bytes());
        nfct_set_attr(ct_, v4 ? ATTR_IPV4_DST : ATTR_IPV6_DST, flow.orig_dst.bytes());
        nfct_set_attr_u8(ct_, ATTR_L4PROTO, IPPROTO_UDP);
        nfct_set_attr_u16(ct_, ATTR_PORT_SRC, htons(flow.orig_sport));
        nfct_set_attr_u16(ct_, ATTR_PORT_DST, htons(flow.orig_dport));
        nfct_set_attr_u16(ct_, ATTR_ZONE, flow.zone);
        if (flow.id) nfct_set_attr_u32(ct_, ATTR_ID, *flow.id);
    }
    ~Query() {
        if (ct_) nfct_destroy(ct_);
    }
    Query(const Query&) = delete;
    Query& operator=(const Query&) = delete;
    nf_conntrack* get() const { return ct_; }

  private:
    nf_conntrack* ct_;
};

class KernelConntrackTable final : public ConntrackTable {
  public:
    Status dump_udp(IpFamily family, std::vector<UdpFlow>& out) override {
        Handle h;
        if (!h.get()) return failure("open a netlink handle", errno);
        nfct_filter_dump* filter = nfct_filter_dump_create();
        if (!filter) return failure("allocate a dump filter", ENOMEM);
        const bool v4 = family == IpFamily::kV4;
        nfct_filter_dump_set_attr_u8(filter, NFCT_FILTER_DUMP_L3NUM, v4 ? AF_INET : AF_INET6);
        DumpState state{v4, &out};
        nfct_callback_register(h.get(), NFCT_T_ALL, on_entry, &state);
        const bool listed = nfct_query(h.get(), NFCT_Q_DUMP_FILTER, filter) == 0;
        const int dump_errno = errno;
        nfct_callback_unregister(h.get());
        nfct_filter_dump_destroy(filter);
        if (!listed) return failure("dump", dump_errno);
        return {};
    }

    std::vector<Status> remove(IpFamily family, const std::vector<UdpFlow>& flows) override {
        std::vector<Status> out;
        if (flows.empty()) return out;
        Handle h;
        const int open_errno = errno;
        for (const UdpFlow& flow : flows) {
            if (!h.get()) {
                out.emplace_back(failure("open a netlink handle", open_errno));
                continue;
            }
            Query query(family, flow);
            if (!query.get()) {
                out.emplace_back(failure("delete", ENOMEM));
            } else if (nfct_query(h.get(), NFCT_Q_DESTROY, query.get()) != 0) {
                out.emplace_back(failure("delete", errno));
            } else {
                out.emplace_back();
            }
        }
        return out;
    }
};

}  // namespace

std::unique_ptr<ConntrackTable> make_kernel_conntrack_table() {
    return std::make_unique<KernelConntrackTable>();
}

}  // namespace sb::rules
