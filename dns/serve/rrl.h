// ResponseRateLimiter: response-rate limiting of UDP replies (--dns-rrl),
// with the semantics of Knot DNS's mod-rrl (docs/dns.md, "Response rate
// limiting"). A UDP source address can be forged, so a server that answers
// every query is an amplifier aimed at whoever the source names; TCP needs a
// handshake and is never limited.
//
// Clients in a whitelisted prefix are never limited (Knot's `whitelist`).
// Each other reply is classified into a flow: the client's /24 (IPv4) or /56
// (IPv6) prefix, the reply's class (normal, empty, large, any, nxdomain,
// error) and, except for nxdomain and error, the question's name. A flow is
// a token bucket of `rate` tokens a second holding at most `rate` tokens
// (one second's burst); a reply takes one token. A reply with no token left
// is limited: every `slip`-th limited reply of the flow goes out truncated
// (TC set, no records: a real client retries over TCP), the others are
// dropped; slip 0 drops them all.
//
// The table is a fixed array of `table_size` buckets, allocated once
// (sizeof(Bucket) bytes each): flows are hashed with a per-process random
// key. A flow whose bucket is held by another flow that is still limiting
// shares it (both are limited together: never more replies than the rate);
// an idle bucket (full again) is taken over.
//
// Thread safety: admit() may be called from any thread (buckets are guarded
// by striped mutexes; counters are atomics).
#pragma once

#include <sys/socket.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/metrics.h"

namespace sb::dns {

struct RrlSettings {
    uint32_t rate = 0;              // --dns-rrl: replies a second per flow; 0: off
    uint32_t slip = 1;              // --dns-rrl-slip: every Nth limited reply truncated
    size_t table_size = 393241;     // --dns-rrl-table-size: buckets (Knot's default)
    std::vector<Prefix> whitelist;  // --dns-rrl-whitelist: clients never limited
};

class ResponseRateLimiter {
  public:
    using Clock = std::chrono::steady_clock;
    enum class Verdict { kSend, kSlip, kDrop };
    // Knot's response classes (those switchboard's replies can take).
    enum class Class : uint8_t { kNormal, kEmpty, kLarge, kAny, kNxdomain, kError };

    // settings.rate and settings.table_size must be > 0.
    explicit ResponseRateLimiter(RrlSettings settings);

    // The fate of `reply` (a whole DNS message) to `client` at `now`. kSlip:
    // `reply` was cut to its header and question with TC set. kDrop: do not
    // send it.
    Verdict admit(const sockaddr_storage& client, std::string& reply, Clock::time_point now);

    static Class classify(std::string_view reply);

    uint64_t slipped() const { return slipped_.load(std::memory_order_relaxed); }
    uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
    // switchboard_dns_rrl_{slipped,dropped}_total.
    void append_metrics(metrics::TextWriter& out) const;

  private:
    struct Bucket {
        uint64_t flow = 0;     // the flow's hash; 0: never used
        int64_t stamp = 0;     // ns since the clock's epoch at the last refill
        int64_t tokens = 0;    // in 1/1e9 of a token
        uint32_t limited = 0;  // limited replies, for the slip
    };
    static constexpr size_t kStripes = 64;

    // The flow's hash (never 0), or 0 when `reply` has no question to cut.
    uint64_t flow_of(const sockaddr_storage& client, std::string_view reply) const;

    const RrlSettings settings_;
    const int64_t capacity_;  // tokens a bucket holds, in 1/1e9 of a token
    uint64_t key_[2] = {};    // the hash key, random per process
    std::unique_ptr<Bucket[]> buckets_;
    std::array<std::mutex, kStripes> stripes_;  // stripe i guards buckets i, i+kStripes, ...
    std::atomic<uint64_t> slipped_{0};
    std::atomic<uint64_t> dropped_{0};
};

// `reply` cut to its header and question with TC set and no records, as a
// slipped reply; false (reply unchanged) when its question is not plain.
bool truncate_to_question(std::string& reply);

}  // namespace sb::dns
