// Netlink answers matched to their request by sequence number, for the
// netlink socket of rules/ (rules/kernel/netlink_socket.h).
//
// The kernel answers a request with messages carrying the request's sequence
// numbers. A request given up before all its answers were read (a receive
// timeout, an error in the middle of a dump) leaves them queued in the
// socket, and the next request reads them first: without this check a late
// refusal would fail the wrong batch. Messages outside the current request's
// numbers are skipped and counted instead. Pure (walks bytes already
// received); one object per request; not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

struct nlmsghdr;

namespace sb::rules {

class NetlinkAnswers {
  public:
    // The request's messages are numbered first_seq..last_seq (a batch; the
    // range may wrap around 2^32) or first_seq alone. `ack_seq`: the message
    // whose acknowledgement ends the request (a batch's last command).
    NetlinkAnswers(uint32_t first_seq, uint32_t last_seq, uint32_t ack_seq);
    explicit NetlinkAnswers(uint32_t seq) : NetlinkAnswers(seq, seq, seq) {}

    // Walks the messages of one datagram. Messages of other requests are
    // skipped (stale()). Of ours: NLMSG_ERROR records the first refusal or an
    // acknowledgement, NLMSG_DONE ends a dump, NLMSG_NOOP is ignored, and
    // every other message goes to `on_data` (when given).
    void feed(const void* bytes, size_t size,
              const std::function<void(const nlmsghdr*)>& on_data = {});

    bool ours(uint32_t seq) const;
    uint32_t first_seq() const { return first_seq_; }
    uint32_t last_seq() const { return last_seq_; }
    // Ours ended: NLMSG_DONE, any refusal, or the acknowledgement of ack_seq.
    bool finished() const { return finished_; }
    bool acked() const { return acked_; }          // ack_seq was acknowledged
    bool data_seen() const { return data_seen_; }  // a data message of ours arrived
    int error() const { return error_; }           // the first refusal's errno, 0: none
    uint32_t error_seq() const { return error_seq_; }
    size_t stale() const { return stale_; }  // messages of other requests skipped

  private:
    uint32_t first_seq_;
    uint32_t last_seq_;
    uint32_t ack_seq_;
    bool finished_ = false;
    bool acked_ = false;
    bool data_seen_ = false;
    int error_ = 0;
    uint32_t error_seq_ = 0;
    size_t stale_ = 0;
};

}  // namespace sb::rules
