// The message exchange under rules/nftables/netlink.h: one NETLINK_NETFILTER
// socket (libmnl), requests and dumps, and batches built in libnftnl's paged
// buffer and sent with one sendmsg(). Every exchange reads only its own
// answers (rules/netlink_answers.h): answers an earlier request left in the
// socket are skipped, counted and logged. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/result.h"

struct mnl_socket;
struct nftnl_batch;
struct nlmsghdr;

namespace sb::rules::nftables {

Error kernel_error(std::string what, int err);

// Accumulates one transaction's messages (NFNL_MSG_BATCH_BEGIN .. END).
class Batch {
  public:
    explicit Batch(uint32_t first_seq);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

    // The header of the next message; its payload is written by the caller,
    // then commit() takes it into the batch.
    nlmsghdr* header(uint16_t type, uint16_t flags);
    void commit();

    size_t messages() const { return messages_; }

  private:
    friend class NetlinkConnection;
    void end();

    uint32_t first_seq_;
    uint32_t seq_;
    uint32_t last_seq_ = 0;
    nlmsghdr* last_ = nullptr;  // the last command (pages never move), nullptr when none
    size_t messages_ = 0;
    nftnl_batch* batch_;
};

class NetlinkConnection {
  public:
    static Result<std::unique_ptr<NetlinkConnection>> open();
    ~NetlinkConnection();
    NetlinkConnection(const NetlinkConnection&) = delete;
    NetlinkConnection& operator=(const NetlinkConnection&) = delete;

    // A fresh sequence number: for a request, or a batch's first message.
    uint32_t next_seq() { return ++seq_; }

    // Sends one request (a dump or a single message) and feeds every reply
    // message to `on_message`. ENOENT from the kernel is kNotFound.
    Status talk(nlmsghdr* request, const std::function<void(const nlmsghdr*)>& on_message);

    // Closes `batch` and sends it; the kernel commits all of it or nothing.
    // An empty batch sends nothing.
    Status send(Batch& batch);

    // Answers of earlier requests skipped since open().
    size_t stale_answers() const { return stale_; }

  private:
    explicit NetlinkConnection(mnl_socket* socket);
    void note_stale(size_t stale);

    mnl_socket* socket_;
    uint32_t seq_;
    size_t stale_ = 0;
};

}  // namespace sb::rules::nftables
