#include "rules/kube_proxy_cleanup/nft_batch.h"

#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <libnftnl/common.h>
#include <libnftnl/table.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <sys/uio.h>

#include <fmt/format.h>

namespace sb::rules::kube_proxy_cleanup {

namespace {

// The batch markers (NFNL_MSG_BATCH_BEGIN / END) around a transaction.
void append_marker(std::vector<char>& out, uint16_t type, uint32_t seq) {
    const size_t at = out.size();
    out.resize(at + MNL_ALIGN(sizeof(nlmsghdr)) + MNL_ALIGN(sizeof(nfgenmsg)), 0);
    nlmsghdr* nlh = mnl_nlmsg_put_header(out.data() + at);
    nlh->nlmsg_type = type;
    nlh->nlmsg_flags = NLM_F_REQUEST;
    nlh->nlmsg_seq = seq;
    auto* nfg = static_cast<nfgenmsg*>(mnl_nlmsg_put_extra_header(nlh, sizeof(nfgenmsg)));
    nfg->nfgen_family = AF_UNSPEC;
    nfg->version = NFNETLINK_V0;
    nfg->res_id = htons(NFNL_SUBSYS_NFTABLES);
}

}  // namespace

Result<NetlinkSocket> open_nftables_socket(std::string step) {
    return NetlinkSocket::open(NETLINK_NETFILTER, std::move(step));
}

Status nft_dump(NetlinkSocket& socket, uint16_t type, uint16_t family, const std::string& what,
                const FillMessage& fill, const std::function<void(const nlmsghdr*)>& on_reply) {
    std::vector<char> buf(MNL_SOCKET_BUFFER_SIZE, 0);
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(buf.data(), type, family, NLM_F_DUMP, socket.next_seq());
    if (fill) fill(nlh);
    return socket.dump(nlh, what, on_reply);
}

Result<std::vector<NftTable>> nft_tables(NetlinkSocket& socket) {
    std::vector<NftTable> out;
    Status listed = nft_dump(
        socket, NFT_MSG_GETTABLE, NFPROTO_UNSPEC, "list tables", nullptr, [&](const nlmsghdr* m) {
            nftnl_table* t = nftnl_table_alloc();
            if (nftnl_table_nlmsg_parse(m, t) == 0) {
                out.push_back(
                    NftTable{static_cast<uint16_t>(nftnl_table_get_u32(t, NFTNL_TABLE_FAMILY)),
                             nftnl_table_get_str(t, NFTNL_TABLE_NAME)});
            }
            nftnl_table_free(t);
        });
    if (!listed) return listed.error();
    return out;
}

const char* nft_family_name(uint16_t family) {
    switch (family) {
        case NFPROTO_IPV4:
            return "ip";
        case NFPROTO_IPV6:
            return "ip6";
        case NFPROTO_INET:
            return "inet";
        case NFPROTO_ARP:
            return "arp";
        case NFPROTO_BRIDGE:
            return "bridge";
        case NFPROTO_NETDEV:
            return "netdev";
        default:
            return "unknown";
    }
}

void NftBatch::add(uint16_t type, uint16_t family, std::string what, const FillMessage& fill) {
    scratch_.resize(MNL_SOCKET_BUFFER_SIZE);
    what_.push_back(std::move(what));
    nlmsghdr* nlh = nftnl_nlmsg_build_hdr(scratch_.data(), type, family, 0,
                                          static_cast<uint32_t>(what_.size()));
    fill(nlh);
    offsets_.push_back(bytes_.size());
    bytes_.insert(bytes_.end(), scratch_.data(), scratch_.data() + MNL_ALIGN(nlh->nlmsg_len));
}

Status nft_commit(NetlinkSocket& socket, const NftBatch& batch) {
    if (batch.empty()) return {};
    // Numbers of the socket's own, unique per batch, so answers left by an
    // earlier batch are told apart: BEGIN takes base, message k (1..last)
    // base + k, END base + last + 1.
    const auto last = static_cast<uint32_t>(batch.what_.size());
    const uint32_t base = socket.next_seqs(last + 2);
    std::vector<char> bytes;
    bytes.reserve(batch.bytes_.size() + 64);
    append_marker(bytes, NFNL_MSG_BATCH_BEGIN, base);
    const size_t first = bytes.size();
    bytes.insert(bytes.end(), batch.bytes_.begin(), batch.bytes_.end());
    for (size_t k = 0; k < batch.offsets_.size(); ++k) {
        reinterpret_cast<nlmsghdr*>(bytes.data() + first + batch.offsets_[k])->nlmsg_seq =
            base + 1 + static_cast<uint32_t>(k);
    }
    append_marker(bytes, NFNL_MSG_BATCH_END, base + last + 1);
    // Only the last message asks for an acknowledgement: seeing it proves
    // the kernel processed the whole batch (a refused message answers
    // anyway, with its error).
    reinterpret_cast<nlmsghdr*>(bytes.data() + first + batch.offsets_.back())->nlmsg_flags |=
        NLM_F_ACK;
    const iovec page{bytes.data(), bytes.size()};
    auto answer = socket.send_batch({&page, 1}, base, base + last + 1, base + last);
    if (!answer) return answer.error();
    if (answer->error != 0) {
        const uint32_t k = answer->failed_seq - base;
        const std::string what =
            k >= 1 && k <= last ? batch.what_[k - 1] : std::string("a transaction");
        return socket.error(fmt::format("{} (one of {} changes, none applied)", what, last),
                            answer->error);
    }
    if (!answer->acked) return socket.error("a transaction was not acknowledged", 0);
    return {};
}

}  // namespace sb::rules::kube_proxy_cleanup
