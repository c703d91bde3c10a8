// One nftables transaction on a NETLINK_NETFILTER socket
// (rules/kernel/netlink_socket.h), of any table and family: libnftnl
// messages built in libnftnl's paged buffer between NFNL_MSG_BATCH_BEGIN and
// END and sent with one sendmsg(), which the kernel commits whole or not at
// all. The one nftables batch writer of rules/: the nftables backend
// (rules/nftables/netlink_batch.h), the notrack table of rules/dns_local and
// --cleanup-kube-proxy (rules/kube_proxy_cleanup) all send through it.
// Building writes bytes only; the sequence numbers are taken from the socket
// when the batch is sent, so the socket may serve other requests (dumps)
// while a batch is built. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "base/result.h"
#include "rules/kernel/netlink_socket.h"

struct nftnl_batch;
struct nlmsghdr;

namespace sb::rules {

// Fills a message's payload (e.g. with nftnl_chain_nlmsg_build_payload).
using FillMessage = std::function<void(nlmsghdr*)>;

// Accumulates one transaction's messages, in order.
class NftBatch {
  public:
    NftBatch();
    ~NftBatch();
    NftBatch(const NftBatch&) = delete;
    NftBatch& operator=(const NftBatch&) = delete;

    // The header of the next message (`family`: NFPROTO_...; `flags`: the
    // NLM_F_ flags beside NLM_F_REQUEST); its payload is written by the
    // caller, then commit() takes it into the batch. `what` names the change
    // in an error ("delete chain ip nat KUBE-SERVICES"); a batch whose
    // refused message has no name reports its size instead.
    nlmsghdr* header(uint16_t type, uint16_t family, uint16_t flags);
    void commit(std::string what = {});
    // header(type, family, 0), then `fill`, then commit(what).
    void add(uint16_t type, uint16_t family, std::string what, const FillMessage& fill);

    size_t messages() const { return messages_; }
    bool empty() const { return messages_ == 0; }

  private:
    friend Status send(NetlinkSocket& socket, NftBatch& batch);

    nftnl_batch* batch_;
    size_t messages_ = 0;
    std::map<size_t, std::string> what_;  // message k (1..) -> its name, when it has one
};

// Closes `batch` and sends it on `socket` as one transaction, which the
// kernel commits whole or not at all; an empty batch sends nothing. A
// refusal carries the kernel's errno and names the refused change ("<what>
// (one of N changes, none applied)") or, for a change without a name, the
// batch ("the kernel refused the batch of N messages"). Precondition: sent
// once.
Status send(NetlinkSocket& socket, NftBatch& batch);

}  // namespace sb::rules
