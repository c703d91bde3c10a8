// One nftables transaction on a NETLINK_NETFILTER socket (rules/
// netlink_socket.h): its messages built in libnftnl's paged buffer between
// NFNL_MSG_BATCH_BEGIN and END, and sent with one sendmsg(), which the
// kernel commits whole or not at all. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/result.h"
#include "rules/netlink_socket.h"

struct nftnl_batch;
struct nlmsghdr;

namespace sb::rules::nftables {

// Accumulates one transaction's messages. Each message takes the socket's
// next sequence number, so the numbers of a batch are consecutive as long as
// the socket makes no other exchange while the batch is built (building only
// writes bytes) and until send(). The socket must outlive the batch.
class Batch {
  public:
    explicit Batch(rules::NetlinkSocket& socket);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    // The header of the next message; its payload is written by the caller,
    // then commit() takes it into the batch.
    nlmsghdr* header(uint16_t type, uint16_t flags);
    void commit();

    size_t messages() const { return messages_; }

  private:
    friend Status send(Batch& batch);
    void end();

    rules::NetlinkSocket& socket_;
    uint32_t first_seq_;
    uint32_t end_seq_ = 0;      // END's number, once end() ran
    uint32_t last_seq_ = 0;     // the last command's number
    nlmsghdr* last_ = nullptr;  // the last command (pages never move), nullptr when none
    size_t messages_ = 0;
    nftnl_batch* batch_;
};

// Closes `batch` and sends it on its socket; the kernel commits all of it or
// nothing. An empty batch sends nothing. A refusal carries the kernel's errno.
Status send(Batch& batch);

}  // namespace sb::rules::nftables
