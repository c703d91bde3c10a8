// What the resolver honours beside the zone's records: the kubernetes
// plugin's zones and `fallthrough`, and answer shuffling (`loadbalance`).
// The defaults are the --dns-* flags path's behaviour; a Corefile sets them
// (dns/corefile/options.cpp, docs/corefile.md).
//
// Thread safety: plain values, immutable once the server starts.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dns/wire/wire.h"

namespace sb::dns {

// Zones in lower-cased wire form; a name matches when it is at or under one.
struct ZoneSet {
    std::vector<std::string> zones;

    bool matches(std::string_view lower_name) const {
        for (const auto& zone : zones) {
            if (name_is_under(lower_name, zone)) return true;
        }
        return false;
    }
    // The longest zone `lower_name` is at or under; empty when none.
    std::string_view longest_match(std::string_view lower_name) const {
        std::string_view best;
        for (const auto& zone : zones) {
            if (zone.size() > best.size() && name_is_under(lower_name, zone)) best = zone;
        }
        return best;
    }
};

// The reverse zones every name of in-addr.arpa and ip6.arpa is under.
inline ZoneSet all_reverse_zones() {
    return ZoneSet{{*name_from_text("in-addr.arpa"), *name_from_text("ip6.arpa")}};
}

struct ClusterPolicy {
    // Reverse zones the kubernetes plugin answers: names there are looked up
    // in the zone (the PTRs of Services and endpoints). Other reverse names
    // are like any name outside the cluster zone (forwarded).
    ZoneSet reverse_zones = all_reverse_zones();
    // Names the kubernetes plugin does not have (NXDOMAIN) in these zones go
    // on to forwarding instead of getting the authoritative NXDOMAIN
    // (CoreDNS's `fallthrough`). The flags path: the reverse zones only, as
    // kubeadm's Corefile has `fallthrough in-addr.arpa ip6.arpa`.
    ZoneSet fallthrough = all_reverse_zones();
};

// Which replies get their A/AAAA records in a random order.
enum class AnswerShuffle {
    kZoneAnswers,  // the flags path: replies from the zone, not forwarded ones
    kAll,          // `loadbalance`: every reply, as CoreDNS's plugin does
    kNone,         // a Corefile without `loadbalance`
};

}  // namespace sb::dns
