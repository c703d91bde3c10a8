// The kernel's conntrack table as rules/ sees it: one UDP flow, and the
// ConntrackTable interface the UDP reconciler (rules/conntrack.h) dumps and
// deletes through. The real table is rules/kernel/conntrack_kernel.h.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "base/ip.h"
#include "base/result.h"

namespace sb::rules {

// One UDP flow as conntrack holds it: where the client sent it (original
// destination) and where the reply comes from (reply source: the endpoint
// after DNAT, or the service address itself when nothing DNATed it). The
// rest identifies the entry for a deletion, as the kernel matches it: the
// original tuple, the zone and conntrack's id of the entry (so a deletion
// cannot hit a newer flow with the same addresses).
struct UdpFlow {
    IpAddress orig_dst;
    uint16_t orig_dport = 0;
    IpAddress reply_src;
    uint16_t reply_sport = 0;
    IpAddress orig_src;
    uint16_t orig_sport = 0;
    uint16_t zone = 0;
    std::optional<uint32_t> id;  // absent: any entry with that tuple

    bool operator==(const UdpFlow&) const = default;
};

// The kernel's conntrack table as the reconciler uses it: the UDP flows of
// one family, and deletions. The real one is libnetfilter_conntrack
// (rules/kernel/conntrack_kernel.h); tests/unit/fake_conntrack.h holds a scripted
// table and records deletions. Not thread-safe; one caller at a time.
class ConntrackTable {
  public:
    virtual ~ConntrackTable() = default;
    // Appends `family`'s UDP flows to `out`. On failure `out` keeps the
    // flows read before it.
    virtual Status dump_udp(IpFamily family, std::vector<UdpFlow>& out) = 0;
    // Deletes each of `flows` (all of `family`), in order; one Status per
    // flow. A flow that is gone already fails with ENOENT (errno_value).
    virtual std::vector<Status> remove(IpFamily family, const std::vector<UdpFlow>& flows) = 0;
};

}  // namespace sb::rules
