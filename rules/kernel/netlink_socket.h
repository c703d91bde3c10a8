// A libmnl netlink socket of any bus (NETLINK_NETFILTER for nftables,
// NETLINK_ROUTE for links and addresses) with the exchanges switchboard
// makes: a query (a dump, or a get answered by data), one request answered
// by an acknowledgement, and a batch sent with one sendmsg(). Shared by the
// nftables backend (rules/nftables), the node-local DNS setup
// (rules/dns_local) and --cleanup-kube-proxy (rules/kube_proxy_cleanup).
// Every exchange reads only its own answers (by sequence number,
// rules/kernel/netlink_answers.h): answers an earlier request left in the socket
// (one given up on a timeout) are skipped, counted and logged, never charged
// to the current one. Replies wait at most 5 s, so a kernel that never
// answers cannot hang the sync loop or an init container. Not thread-safe;
// movable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"

struct iovec;
struct nlmsghdr;

namespace sb::rules {

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

    // Sends `request` (a dump when NLM_F_DUMP is set, else a get the kernel
    // answers with data) and feeds every reply to `on_reply`. The kernel's
    // ENOENT (no such table, object) is an error of code kNotFound. `what`
    // names the query in an error ("list tables").
    Status query(const nlmsghdr* request, const std::string& what,
                 const std::function<void(const nlmsghdr*)>& on_reply);
    // query() of a listing, where ENOENT is an empty one.
    Status dump(const nlmsghdr* request, const std::string& what,
                const std::function<void(const nlmsghdr*)>& on_reply);

    // Sends `request` (NLM_F_ACK is added) and waits for its answer; a
    // refusal is an error carrying the kernel's errno.
    Status request(nlmsghdr* request);

    // Sends the messages in `pages` (sequence numbers first_seq..last_seq,
    // both included) with one sendmsg, then reads the answers already queued
    // (the kernel processes an nfnetlink batch inside the send) and returns
    // the first refusal's sequence number and errno (0, 0 when none) and
    // whether `ack_seq` was acknowledged.
    struct BatchAnswer {
        uint32_t failed_seq = 0;
        int error = 0;
        bool acked = false;
    };
    Result<BatchAnswer> send_batch(std::span<const iovec> pages, uint32_t first_seq,
                                   uint32_t last_seq, uint32_t ack_seq);

    // Answers of earlier requests skipped since open().
    size_t stale_answers() const;

    // An error of this socket: "<name>: <what>" with `err` (an errno, or 0).
    Error error(const std::string& what, int err) const;

  private:
    void note_stale(size_t stale);

    struct Impl;
    explicit NetlinkSocket(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sb::rules
