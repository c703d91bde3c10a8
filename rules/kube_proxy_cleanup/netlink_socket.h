// A libmnl netlink socket of any bus (NETLINK_NETFILTER for nftables,
// NETLINK_ROUTE for links and addresses) with the two exchanges the cleanup
// steps make: a dump, and one request answered by an acknowledgement.
// Replies wait at most 5 s, so a kernel that never answers cannot hang an
// init container. Not thread-safe; movable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"

struct nlmsghdr;

namespace sb::rules::kube_proxy_cleanup {

class NetlinkSocket {
  public:
    // `bus`: NETLINK_...; `name` prefixes error messages ("nftables").
    static Result<NetlinkSocket> open(int bus, std::string name);
    NetlinkSocket(NetlinkSocket&&) noexcept;
    NetlinkSocket& operator=(NetlinkSocket&&) noexcept;
    ~NetlinkSocket();

    // A fresh sequence number for a request.
    uint32_t next_seq();
    // The first of `count` consecutive fresh numbers (a batch's messages).
    uint32_t next_seqs(uint32_t count);

    // Every exchange reads only its own answers (by sequence number,
    // rules/netlink_answers.h): answers an earlier request left in the
    // socket are skipped and logged, never charged to this one.

    // Sends `request` (NLM_F_DUMP set) and feeds every reply to `on_reply`.
    // ENOENT (no such table) is an empty dump. `what` names the listing in
    // an error ("list tables").
    Status dump(const nlmsghdr* request, const std::string& what,
                const std::function<void(const nlmsghdr*)>& on_reply);

    // Sends `request` (NLM_F_ACK is added) and waits for its answer; a
    // refusal is an error carrying the kernel's errno.
    Status request(nlmsghdr* request);

    // Sends `size` bytes of messages with one sendmsg, then reads the
    // answers already queued (the kernel processes an nfnetlink batch inside
    // the send) and returns the first refusal's sequence number and errno
    // (0, 0 when none) and whether `ack_seq` was acknowledged.
    struct BatchAnswer {
        uint32_t failed_seq = 0;
        int error = 0;
        bool acked = false;
    };
    Result<BatchAnswer> send_batch(const char* bytes, size_t size, uint32_t ack_seq);

    Error error(const std::string& what, int err) const;

  private:
    void note_stale(size_t stale) const;

    struct Impl;
    explicit NetlinkSocket(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::rules::kube_proxy_cleanup
