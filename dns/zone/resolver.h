// Resolver: answers one parsed query from a Zone, with no sockets and no
// clock (pure, so every rule is unit-tested). The server calls it for every
// query; what it cannot answer from the zone it hands back as a forward.
#pragma once

#include <memory>

#include "dns/wire/wire.h"
#include "dns/zone/hosts.h"
#include "dns/zone/resolver_policy.h"
#include "dns/zone/zone.h"

namespace sb::dns {

struct Resolution {
    enum class Kind {
        kReply,    // `response` is complete (apart from EDNS: see finish_reply)
        kForward,  // ask an upstream `forward` and append its answer to `response`
        kDrop,     // not a query (QR set): no reply, so two servers cannot loop
    };
    Kind kind = Kind::kReply;
    // kReply: the reply. kForward: the reply so far: header, question and
    // the records that lead to `forward` (an ExternalName's CNAME), if any.
    Message response;
    Question forward;
};

struct ResolverOptions {
    bool forwarding = false;  // upstreams exist: names outside the zone are forwarded
    // The kubernetes plugin's reverse zones and fallthrough; null: the
    // flags path's (ClusterPolicy's defaults). Not owned.
    const ClusterPolicy* cluster = nullptr;
    // The hosts plugin's table, asked before the zone (CoreDNS's plugin
    // order); null: no hosts plugin. Not owned.
    const HostsTable* hosts = nullptr;
};

// `zone` may be null (no zone built yet): cluster names get SERVFAIL then.
// A name the kubernetes plugin does not have (NXDOMAIN) in its fallthrough
// zones is resolved as a name outside the zone: forwarded, or REFUSED
// without upstreams.
Resolution resolve(const Zone* zone, const Message& query, const ResolverOptions& options);

// The reply to a packet that did not parse (FORMERR) or a query with another
// opcode (NOTIMP): the header echoed, no question. Empty when the packet is
// too short to carry a header or is itself a response.
std::string error_reply(std::span<const uint8_t> packet, Rcode rcode);

// Adds the OPT record a reply carries when the query had one (our payload
// size, the query's DO bit) and returns the size limit for a UDP reply.
size_t finish_reply(const Message& query, Message& reply);

// What a forwarded query keeps while its upstream is asked: the header, the
// question and the EDNS state finish_reply reads (no options), not the
// other sections, whose compression pointers can expand a 4 KB packet to
// ~100 KB of parsed records (issue 10).
Message reply_basis(const Message& query);

}  // namespace sb::dns
