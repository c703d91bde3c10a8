// How one upstream set (a Corefile `forward` directive) picks its upstreams:
// the options CoreDNS's forward plugin has, and the pure functions that turn
// a policy and the upstreams' health into the order one query tries them.
// docs/dns.md#forwarding.
//
// Thread safety: pure functions and value types.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/ip.h"
#include "dns/forward/tls_client.h"

namespace sb::dns {

// kPreferred is switchboard's own (the --dns-upstream path): start with the
// upstream that answered last. The others are CoreDNS's `policy` values.
enum class UpstreamPolicy { kPreferred, kRandom, kRoundRobin, kSequential };

// kClient: the client's protocol (CoreDNS's default); kUdp: UDP, TCP again
// when the reply is truncated (`prefer_udp`, and the --dns-upstream path);
// kTcp: `force_tcp`.
enum class UpstreamProtocol { kClient, kUdp, kTcp };

// The protocol the client asked us over.
enum class ClientProtocol { kUdp, kTcp };

// The options of one upstream set. The defaults are the --dns-upstream
// path's behaviour; apply_corefile sets CoreDNS's for a Corefile `forward`.
struct ForwardSetOptions {
    UpstreamPolicy policy = UpstreamPolicy::kPreferred;
    UpstreamProtocol protocol = UpstreamProtocol::kUdp;
    uint32_t max_concurrent = 0;  // `max_concurrent`; 0: no limit
    // An upstream is down after more than max_fails failed health probes
    // (CoreDNS's max_fails, 2 in a Corefile); 0: no health checking.
    uint32_t max_fails = 0;
    std::chrono::milliseconds health_check{500};  // the probe interval
    // A reply with one of these rcodes tries the next upstream: `failover`
    // in a Corefile (none by default: CoreDNS passes every rcode to the
    // client); SERVFAIL and REFUSED on the --dns-upstream path.
    std::vector<uint8_t> failover_rcodes = {2, 5};
    // Attempts one query makes (`max_connect_attempts`); 0: the forwarder's.
    uint32_t max_attempts = 0;
    // Each attempt's timeout (`read_timeout`); unset: the forwarder's.
    std::optional<std::chrono::milliseconds> read_timeout;
    // The local address of every upstream socket (`source_address`).
    std::optional<IpAddress> source;
    // `failfast_all_unhealthy_upstreams`: when every upstream is down the
    // query fails (SERVFAIL) instead of asking a random one.
    bool failfast_all_down = false;
    // DNS over TLS (`tls://`): the client (`tls`, `tls_servername`) and
    // the members asked through it; the others are plain DNS.
    std::shared_ptr<const TlsClient> tls;
    std::vector<TlsUpstream> tls_upstreams;
    // `except`: names at or under these (wire form, lower-case) are not
    // forwarded by this set, FROM itself excepted.
    std::vector<std::string> except;
};

// The order one query tries `count` upstreams in, as indices 0..count-1.
// `turn` is the set's query counter after this query (round_robin),
// `preferred` the index kPreferred starts at, `random` a source of random
// numbers (random). round_robin is CoreDNS's: the turn's upstream first,
// then the others in configured order.
std::vector<size_t> upstream_order(UpstreamPolicy policy, size_t count, uint64_t turn,
                                   size_t preferred, const std::function<uint64_t()>& random);

struct UpstreamPick {
    size_t index = 0;          // into the order's values: the upstream to ask
    size_t next_position = 0;  // where the next attempt starts in the order
    bool all_down = false;     // every upstream was down: a random one was taken
};

// The next upstream of `order` to ask, from `position` on (wrapping): the
// first one `down` does not report. When every one is down CoreDNS assumes
// the health checking is broken and asks a random one (all_down). Requires a
// non-empty order.
UpstreamPick pick_upstream(const std::vector<size_t>& order, size_t position,
                           const std::function<bool(size_t)>& down, uint64_t random);

}  // namespace sb::dns
