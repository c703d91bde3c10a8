// Zone: the cluster's DNS records, indexed from one Store snapshot.
//
// Built from a watch::Snapshot per the Kubernetes DNS-Based Service Discovery
// specification 1.1.0 (see docs/dns.md for the record list) and immutable
// afterwards: the server swaps whole zones atomically, so readers on any
// thread need no lock. Names are keys in lower-cased wire form.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "dns/dns_service.h"
#include "dns/wire.h"
#include "watch/store.h"

namespace sb::dns {

struct ZoneConfig {
    std::string domain = "cluster.local";  // text, without the trailing dot
    uint32_t ttl = 30;
    PodRecords pods = PodRecords::kInsecure;
    // CoreDNS's `endpoint_pod_names`: a headless endpoint without a hostname
    // is named after its targetRef (when that name is a DNS label) instead
    // of its dashed address.
    bool endpoint_pod_names = false;
    // false: CoreDNS's `noendpoints`: no record comes from EndpointSlices
    // (headless Services and their endpoint names do not exist).
    bool endpoints = true;
};

class Zone {
  public:
    struct RRset {
        uint16_t rtype = 0;
        std::vector<std::string> rdatas;  // uncompressed rdata, sorted, unique
    };
    // A name of the zone; an empty non-terminal has no RRsets.
    struct Node {
        std::vector<RRset> rrsets;
        const RRset* find(uint16_t rtype) const;
    };

    // Error only when the domain is not a valid DNS name.
    static Result<std::shared_ptr<const Zone>> build(const watch::Snapshot& snapshot,
                                                     const ZoneConfig& config);

    // `lower_name`: lower-cased wire form. Covers the cluster zone and the
    // reverse names (in-addr.arpa, ip6.arpa) of published addresses.
    const Node* find(std::string_view lower_name) const;

    const std::string& origin() const { return origin_; }  // lower-cased wire form
    uint32_t ttl() const { return config_.ttl; }
    PodRecords pods() const { return config_.pods; }
    bool synced() const { return synced_; }
    uint32_t serial() const { return serial_; }
    // The zone's SOA record (owner: the origin).
    const Record& soa() const { return soa_; }
    // An SOA like soa() for another apex the server is authoritative for
    // (a reverse zone of the kubernetes plugin), `origin` in wire form.
    Record soa_for(std::string_view origin) const;
    // --dns-pods=verified: whether `address` belongs to a Pod in namespace `ns`
    // (an EndpointSlice endpoint whose targetRef is that Pod).
    bool pod_known(std::string_view ns, const IpAddress& address) const;
    // Whether any Service or EndpointSlice lives in namespace `ns` (lower case).
    bool namespace_known(std::string_view ns) const;
    size_t name_count() const { return nodes_.size(); }

  private:
    ZoneConfig config_;
    std::string origin_;
    bool synced_ = false;
    uint32_t serial_ = 0;
    Record soa_;
    std::unordered_map<std::string, Node> nodes_;
    std::unordered_set<std::string> pods_;  // "ns/" + address bytes
    std::unordered_set<std::string> namespaces_;
};

// d.c.b.a.in-addr.arpa / nibbles.ip6.arpa, wire form.
std::string reverse_name(const IpAddress& address);
// The name Kubernetes DNS gives an address without a hostname: dots (IPv4) or
// colons (IPv6, RFC 5952 text) replaced by dashes.
std::string dashed_address(const IpAddress& address);
// The inverse of dashed_address, accepting any well-formed dashed form.
Result<IpAddress> parse_dashed_address(std::string_view label);

}  // namespace sb::dns
