#include "dns/zone/resolver.h"

#include <algorithm>

namespace sb::dns {

namespace {

constexpr int kMaxCnameChain = 8;
constexpr uint8_t kBadVersExtended = 1;  // BADVERS (16) = extended 1, rcode 0

const ClusterPolicy& flags_policy() {
    static const ClusterPolicy policy;
    return policy;
}

Message reply_skeleton(const Message& query, const ResolverOptions& options) {
    Message reply;
    reply.header.id = query.header.id;
    reply.header.qr = true;
    reply.header.opcode = query.header.opcode;
    reply.header.rd = query.header.rd;
    reply.header.cd = query.header.cd;
    reply.header.ra = options.forwarding;
    // Echo the question only when there is exactly one: a reply to a
    // malformed query stays small.
    if (query.questions.size() == 1) reply.questions = query.questions;
    return reply;
}

void set_rcode(Message& reply, Rcode rcode) {
    reply.header.rcode = static_cast<uint8_t>(rcode);
}

void add_rrset(std::vector<Record>& section, std::string_view owner, const Zone::RRset& rrset,
               uint32_t ttl) {
    for (const auto& rdata : rrset.rdatas) {
        section.push_back(Record{std::string(owner), rrset.rtype, kClassIN, ttl, rdata});
    }
}

void add_soa(const Zone& zone, Message& reply) {
    reply.authority.push_back(zone.soa());
}

// a-b-c-d.ns.pod.<zone>: the synthesized pod record, when --dns-pods allows it.
// Returns false when the name is not a pod name that exists.
bool pod_address(const Zone& zone, std::string_view lower_name, IpAddress& address) {
    if (zone.pods() == PodRecords::kDisabled) return false;
    if (name_label_count(lower_name) != name_label_count(zone.origin()) + 3) return false;
    std::string_view ns_name = name_parent(lower_name);
    std::string_view pod_name = name_parent(ns_name);
    if (name_first_label(pod_name) != "pod") return false;
    auto parsed = parse_dashed_address(name_first_label(lower_name));
    if (!parsed) return false;
    std::string_view ns = name_first_label(ns_name);
    if (zone.pods() == PodRecords::kVerified && !zone.pod_known(ns, *parsed)) return false;
    address = *parsed;
    return true;
}

// ns.pod.<zone> is an empty non-terminal when pod names may exist under it.
bool pod_namespace_exists(const Zone& zone, std::string_view lower_name) {
    if (zone.pods() == PodRecords::kDisabled) return false;
    if (name_label_count(lower_name) != name_label_count(zone.origin()) + 2) return false;
    if (name_first_label(name_parent(lower_name)) != "pod") return false;
    return zone.pods() == PodRecords::kInsecure ||
           zone.namespace_known(name_first_label(lower_name));
}

// Answers `owner` (as it should appear) / `lower` from the zone, following
// in-zone CNAMEs. Sets `forward` when a CNAME leaves the zone and the type
// is worth chasing upstream.
void answer_in_zone(const Zone& zone, std::string owner, std::string lower, uint16_t qtype,
                    Message& reply, std::optional<Question>& forward, bool forwarding) {
    for (int depth = 0; depth < kMaxCnameChain; ++depth) {
        const Zone::NodeRef node = zone.find(lower);
        if (!node) {
            IpAddress address;
            if (pod_address(zone, lower, address)) {
                uint16_t rtype = address.is_v4() ? type::kA : type::kAAAA;
                if (qtype == rtype || qtype == type::kANY) {
                    reply.answers.push_back(
                        Record{owner, rtype, kClassIN, zone.ttl(), rdata_address(address)});
                } else {
                    add_soa(zone, reply);
                }
                return;
            }
            if (pod_namespace_exists(zone, lower)) {
                add_soa(zone, reply);
                return;
            }
            set_rcode(reply, Rcode::kNXDomain);
            add_soa(zone, reply);
            return;
        }
        if (qtype == type::kANY) {
            // RFC 8482: one RRset is a complete answer to ANY.
            if (node->rrsets.empty()) {
                add_soa(zone, reply);
            } else {
                add_rrset(reply.answers, owner, node->rrsets.front(), zone.ttl());
            }
            return;
        }
        if (const Zone::RRset* rrset = node->find(qtype)) {
            add_rrset(reply.answers, owner, *rrset, zone.ttl());
            if (qtype == type::kSRV) {
                // The targets' addresses, so clients need no second query.
                for (const auto& rdata : rrset->rdatas) {
                    std::string target = rdata.substr(6);
                    if (const Zone::NodeRef t = zone.find(target)) {
                        for (uint16_t at : {type::kA, type::kAAAA}) {
                            if (const Zone::RRset* addresses = t->find(at)) {
                                add_rrset(reply.additional, target, *addresses, zone.ttl());
                            }
                        }
                    }
                }
            }
            return;
        }
        const Zone::RRset* cname = node->find(type::kCNAME);
        if (!cname || cname->rdatas.empty()) {
            add_soa(zone, reply);  // NODATA
            return;
        }
        const std::string& target = cname->rdatas.front();
        reply.answers.push_back(Record{owner, type::kCNAME, kClassIN, zone.ttl(), target});
        if (!name_is_under(target, zone.origin())) {
            if (forwarding && (qtype == type::kA || qtype == type::kAAAA)) {
                forward = Question{target, qtype, kClassIN};
            }
            return;
        }
        owner = target;
        lower = target;
    }
    set_rcode(reply, Rcode::kServFail);  // CNAME chain too long (or a loop)
}

}  // namespace

Resolution resolve(const Zone* zone, const Message& query, const ResolverOptions& options) {
    Resolution result;
    if (query.header.qr) {
        result.kind = Resolution::Kind::kDrop;
        return result;
    }
    Message& reply = result.response = reply_skeleton(query, options);
    if (query.header.opcode != 0) {
        set_rcode(reply, Rcode::kNotImp);
        return result;
    }
    if (query.questions.size() != 1 || !query.answers.empty() || !query.authority.empty()) {
        set_rcode(reply, Rcode::kFormErr);
        return result;
    }
    if (query.edns && query.edns->version != 0) {
        // RFC 6891 6.1.3: BADVERS, with our OPT (finish_reply adds it).
        reply.questions.clear();
        reply.edns = Edns{};
        reply.edns->extended_rcode = kBadVersExtended;
        return result;
    }
    const Question& question = query.questions.front();
    if (question.qtype == type::kOPT) {
        set_rcode(reply, Rcode::kFormErr);
        return result;
    }
    if (question.qclass != kClassIN && question.qclass != kClassANY) {
        set_rcode(reply, Rcode::kRefused);
        return result;
    }
    std::string lower = name_lower(question.name);
    if (options.hosts) {
        switch (options.hosts->answer(question, lower, reply.answers)) {
            case HostsTable::Verdict::kReply:
                reply.header.aa = true;
                return result;
            case HostsTable::Verdict::kServFail:
                set_rcode(reply, Rcode::kServFail);
                return result;
            case HostsTable::Verdict::kNext:
                break;
        }
    }
    const ClusterPolicy& policy = options.cluster ? *options.cluster : flags_policy();
    bool in_zone = zone ? name_is_under(lower, zone->origin())
                        : false;  // without a zone the origin is unknown: see below
    if (zone && in_zone) {
        if (question.qtype == type::kAXFR || question.qtype == type::kIXFR) {
            set_rcode(reply, Rcode::kRefused);
            return result;
        }
        if (!zone->synced()) {
            set_rcode(reply, Rcode::kServFail);
            return result;
        }
        reply.header.aa = true;
        std::optional<Question> forward;
        answer_in_zone(*zone, question.name, lower, question.qtype, reply, forward,
                       options.forwarding);
        if (forward) {
            result.kind = Resolution::Kind::kForward;
            result.forward = *forward;
            return result;
        }
        if (reply.header.rcode != static_cast<uint8_t>(Rcode::kNXDomain) ||
            !policy.fallthrough.matches(lower)) {
            return result;
        }
        reply = reply_skeleton(query, options);  // falls through: as an outside name
    }
    std::string_view reverse_zone = policy.reverse_zones.longest_match(lower);
    bool reverse = !reverse_zone.empty();
    if (zone && reverse && zone->synced()) {
        if (const Zone::NodeRef node = zone->find(lower)) {
            reply.header.aa = true;
            if (const Zone::RRset* rrset = node->find(question.qtype)) {
                add_rrset(reply.answers, question.name, *rrset, zone->ttl());
            } else if (question.qtype == type::kANY && !node->rrsets.empty()) {
                add_rrset(reply.answers, question.name, node->rrsets.front(), zone->ttl());
            }
            return result;
        }
        if (!policy.fallthrough.matches(lower)) {
            reply.header.aa = true;
            set_rcode(reply, Rcode::kNXDomain);
            reply.authority.push_back(zone->soa_for(reverse_zone));
            return result;
        }
    }
    if (!zone || (reverse && !zone->synced())) {
        // Before the first zone we cannot tell a cluster name from another.
        set_rcode(reply, Rcode::kServFail);
        return result;
    }
    if (!options.forwarding) {
        set_rcode(reply, Rcode::kRefused);
        return result;
    }
    result.kind = Resolution::Kind::kForward;
    result.forward = question;
    return result;
}

std::string error_reply(std::span<const uint8_t> packet, Rcode rcode) {
    QueryHeaderPeek peek = peek_header(packet);
    if (!peek.has_header || peek.header.qr) return {};
    Message reply;
    reply.header = peek.header;
    reply.header.qr = true;
    reply.header.aa = false;
    reply.header.tc = false;
    reply.header.ra = false;
    reply.header.ad = false;
    reply.header.rcode = static_cast<uint8_t>(rcode);
    return write_message(reply).bytes;
}

size_t finish_reply(const Message& query, Message& reply) {
    if (!query.edns) {
        reply.edns.reset();
        return kClassicUdpSize;
    }
    uint8_t extended = reply.edns ? reply.edns->extended_rcode : 0;
    Edns edns;
    edns.udp_size = kEdnsUdpSize;
    edns.extended_rcode = extended;
    edns.dnssec_ok = query.edns->dnssec_ok;
    reply.edns = std::move(edns);
    return std::clamp<size_t>(query.edns->udp_size, kClassicUdpSize, kEdnsUdpSize);
}

Message reply_basis(const Message& query) {
    Message kept;
    kept.header = query.header;
    if (query.questions.size() == 1) kept.questions = query.questions;
    if (query.edns) {
        kept.edns = Edns{};
        kept.edns->udp_size = query.edns->udp_size;
        kept.edns->version = query.edns->version;
        kept.edns->dnssec_ok = query.edns->dnssec_ok;
    }
    return kept;
}

}  // namespace sb::dns
