// Zone: the cluster's DNS records, indexed from one Store snapshot.
//
// Built from a watch::Snapshot per the Kubernetes DNS-Based Service Discovery
// specification 1.1.0 (see docs/dns.md for the record list) and immutable
// afterwards: the server swaps whole zones atomically, so readers on any
// thread need no lock. Names are keys in lower-cased wire form.
//
// A zone of a snapshot that is not synced yet holds only the apex (SOA, NS,
// the version TXT and the empty non-terminals svc and pod): the resolver
// answers SERVFAIL to every name it would look up in such a zone
// (dns/zone/resolver.cpp), so its records would be built for nothing, and during
// the first LIST each rebuild would copy most of the growing zone while
// the previous one is still published (a second whole zone at the peak).
// The first synced zone is then built in full from an apex-only one. Under
// ZoneConfig::publish_after_programming a zone counts as synced only once
// the proxy has reported its first sync too.
//
// A zone is either built in full or derived from the previous one by
// update(), which recomputes only the Services and EndpointSlices a change
// list names and shares every other record with the previous zone
// (dns/zone/sharded_map.h). Each name counts the Services contributing it and
// each rdata the Services contributing that record, so a name or record two
// Services share (a reverse name, an empty non-terminal) stays while one of
// them still brings it. Both paths give the same zone (tests/unit/dns/zone/
// test_zone_update.cpp checks it against random changes).
//
// Not every name is kept as a name (docs/dns.md, "Zone memory"): a built
// zone keeps its reverse names as references to the Services and endpoints
// naming them (reverse_), and the names a Service that is not headless owns
// (owner_of) are written from its entry when asked. find() and
// for_each_name() answer for every name alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "dns/wire/names.h"
#include "dns/wire/wire.h"
#include "dns/zone/address_index.h"
#include "dns/zone/one_or_many.h"
#include "dns/zone/pod_records.h"
#include "dns/zone/programmed.h"
#include "dns/zone/sharded_map.h"
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
    // The daemon's proxy programs this node's kernel: a Service it programs
    // has its ClusterIP names (A/AAAA, their PTRs, SRV, its endpoints'
    // PTRs) only for what ProgrammedServices says the kernel serves, and the
    // zone is held back whole until the first report (dns/zone/programmed.h).
    bool publish_after_programming = false;
    // --dns-local-address: ClusterIPs this node answers on itself, which
    // get no rules and so wait for none.
    std::vector<IpAddress> local_dns_addresses;
    bool operator==(const ZoneConfig&) const = default;
};

class Zone {
  public:
    // One rdata of an RRset and how many Services bring it (the zone's
    // bookkeeping: a record two Services share stays while one still does).
    struct Rdata {
        std::string bytes;  // uncompressed
        uint32_t owners = 1;
    };
    // The rdatas of an RRset, sorted by bytes, unique; iterating yields the
    // uncompressed rdata (const std::string&).
    struct Rdatas {
        class iterator {
          public:
            using iterator_category = std::forward_iterator_tag;
            using value_type = std::string;
            using difference_type = std::ptrdiff_t;
            using pointer = const std::string*;
            using reference = const std::string&;
            iterator() = default;
            explicit iterator(const Rdata* at) : at_(at) {}
            reference operator*() const { return at_->bytes; }
            pointer operator->() const { return &at_->bytes; }
            iterator& operator++() {
                ++at_;
                return *this;
            }
            iterator operator++(int) {
                iterator before = *this;
                ++at_;
                return before;
            }
            bool operator==(const iterator&) const = default;

          private:
            const Rdata* at_ = nullptr;
        };
        iterator begin() const { return iterator(entries.begin()); }
        iterator end() const { return iterator(entries.end()); }
        size_t size() const { return entries.size(); }
        bool empty() const { return entries.empty(); }
        const std::string& front() const { return entries.front().bytes; }

        OneOrMany<Rdata> entries;
    };
    struct RRset {
        uint16_t rtype = 0;
        Rdatas rdatas;
    };
    // A name of the zone, its RRsets ordered by type; an empty non-terminal
    // has none. Most names have one RRset of one rdata, held in place.
    struct Node {
        OneOrMany<RRset> rrsets;
        const RRset* find(uint16_t rtype) const;
    };

    // Error only when the domain is not a valid DNS name. `programmed` is
    // read only under config.publish_after_programming (null: nothing is
    // programmed or reported yet) and only during the call.
    static Result<std::shared_ptr<const Zone>> build(
        const watch::Snapshot& snapshot, const ZoneConfig& config,
        const ProgrammedServices* programmed = nullptr);
    // The zone of `snapshot`, derived from this one: `changes` must name
    // every Service and EndpointSlice that differs between the snapshot this
    // zone was built from and `snapshot` (a key named needlessly costs only
    // time). Keys are compared with what this zone applied, not with the
    // previous snapshot, so a change the list names late is picked up by
    // the update that names it. Same configuration as this zone. A Service
    // whose programmed state changed must be named too (a kService change).
    std::shared_ptr<const Zone> update(const watch::Snapshot& snapshot,
                                       const std::vector<watch::Change>& changes,
                                       const ProgrammedServices* programmed = nullptr) const;

    // The warm state (dns/zone/zone_state.cpp; docs/dns.md, "Warm start"):
    // this zone's names and records, its namespaces and (kVerified) Pods,
    // its configuration's domain, ttl and record switches, and `identity`
    // (whose state it is: the daemon's boot and network namespace) as
    // versioned, checksummed bytes. A zone that is not synced has nothing to
    // keep: callers write only synced zones.
    std::string state_bytes(std::string_view identity) const;
    // The same bytes, handed to `sink` in order, in pieces of about 64 KiB:
    // a writer never holds them whole. `sink` may not touch this zone. A
    // `sink` that throws stops the writing: the exception leaves
    // write_state, and `sink` is not called again.
    void write_state(std::string_view identity,
                     const std::function<void(std::string_view)>& sink) const;
    // The zone `bytes` describe, synced, for `config`. Error (one line: why)
    // for bytes that are truncated, corrupt, of another format version or
    // identity, larger than kMaxStateBytes, or made with another domain, ttl
    // or record switches than `config`. The zone is for serving only: it
    // knows no Service or slice, so it is never the base of update().
    static Result<std::shared_ptr<const Zone>> from_state_bytes(std::string_view bytes,
                                                                const ZoneConfig& config,
                                                                std::string_view identity);
    static constexpr size_t kMaxStateBytes = size_t{512} << 20;

    // What find() gives: a name's node, or none (false, equal to nullptr).
    // The node of a reverse name the zone keeps as an index entry (below)
    // is made for the lookup and held here; any other points into the zone.
    // Valid while this NodeRef and its zone live.
    class NodeRef {
      public:
        NodeRef() = default;
        explicit NodeRef(const Node* stored) : stored_(stored) {}
        explicit NodeRef(Node made) : made_(std::move(made)) {}
        explicit operator bool() const { return stored_ || made_; }
        bool operator==(std::nullptr_t) const { return !*this; }
        const Node& operator*() const { return stored_ ? *stored_ : *made_; }
        const Node* operator->() const { return &**this; }

      private:
        const Node* stored_ = nullptr;
        std::optional<Node> made_;
    };

    // `lower_name`: lower-cased wire form. Covers the cluster zone and the
    // reverse names (in-addr.arpa, ip6.arpa) of published addresses.
    NodeRef find(std::string_view lower_name) const;

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
    // (an EndpointSlice endpoint whose targetRef is that Pod). Only a zone
    // configured with PodRecords::kVerified keeps that table (the only one
    // that asks it); any other answers false.
    bool pod_known(std::string_view ns, const IpAddress& address) const;
    // Whether any Service or EndpointSlice lives in namespace `ns` (lower case).
    bool namespace_known(std::string_view ns) const;
    size_t name_count() const { return names_.size() + reverse_.address_count() + owned_names_; }
    const ZoneConfig& config() const { return config_; }
    // Calls f(lower_name, node) for every name, in no particular order.
    template <typename F>
    void for_each_name(F&& f) const {
        names_.for_each(
            [&f](const std::string& key, const Name& stored) { f(name_of_key(key), stored.node); });
        reverse_.for_each_address(
            [this, &f](const IpAddress& address, const std::vector<ReverseSource>& sources) {
                f(reverse_name(address), reverse_node(address, sources));
            });
        services_.for_each([this, &f](const KeyRef&, const AppliedService& applied) {
            if (!written_when_asked(*applied.entry->service)) return;
            for (const auto& [name, node] : service_fragment(applied, false).names) {
                if (owner_of(name)) f(name, node);
            }
        });
    }

  private:
    // A name and how many fragments hold it (an empty non-terminal too).
    struct Name {
        Node node;
        uint32_t owners = 0;
    };
    // What names a reverse name of a built zone: a Service's ClusterIP
    // (endpoint null: the PTR's target is the Service's name) or one of its
    // ready endpoints (the target is the endpoint's name under the
    // Service's). Both point into objects the Service's entry in services_
    // keeps alive: a source is removed before its entry goes (see
    // apply_service), so the targets are written when asked, from the
    // objects, instead of being held as names and strings.
    struct ReverseSource {
        const watch::Service* service = nullptr;
        const watch::Endpoint* endpoint = nullptr;
    };
    // The records one Service (or the zone's apex) brings, with the empty
    // non-terminals above them; every Rdata's owners is 1. The reverse
    // names it brings are listed apart: the address and the endpoint
    // naming it (null: the Service), for reverse_.
    struct Fragment {
        std::unordered_map<std::string, Node> names;
        std::vector<std::pair<IpAddress, const watch::Endpoint*>> reverse;
    };
    // An object key that points at a namespace and a name held elsewhere:
    // in services_ and slices_, at the meta of the object the entry's own
    // pointer keeps alive (so the tables hold no copy of the strings; an
    // entry is erased before it is set again, so its key never outlives its
    // object); in a lookup, at the caller's key.
    struct KeyRef {
        const std::string* ns;
        const std::string* name;
        explicit KeyRef(const watch::ObjectKey& key) : ns(&key.ns), name(&key.name) {}
        explicit KeyRef(const watch::ObjectMeta& meta) : ns(&meta.ns), name(&meta.name) {}
        bool operator==(const KeyRef& other) const {
            return *ns == *other.ns && *name == *other.name;
        }
    };
    struct KeyRefHash {
        size_t operator()(const KeyRef& key) const {
            return std::hash<std::string>{}(*key.ns) * 31 + std::hash<std::string>{}(*key.name);
        }
    };
    using ServiceEntryPtr = std::shared_ptr<const watch::ServiceEntry>;
    // What a Service's records were made from: its entry and, when its
    // names wait for its rules, what the kernel served then.
    struct AppliedService {
        ServiceEntryPtr entry;
        ProgrammedServicePtr programmed;
        bool operator==(const AppliedService&) const = default;
    };
    using SlicePtr = std::shared_ptr<const watch::EndpointSlice>;

    // The address whose canonical reverse name `lower_name` is, if any; the
    // key of a reverse name in names_ (none: the name is its own key), and
    // any key's name (see zone.cpp).
    static std::optional<IpAddress> reverse_address(std::string_view lower_name);
    static std::optional<std::string> reverse_key(std::string_view lower_name);
    static std::string name_of_key(const std::string& key);
    // The node of `address`'s reverse name from its sources: one PTR RRset,
    // each target once, its owners the Services naming it.
    Node reverse_node(const IpAddress& address, const std::vector<ReverseSource>& sources) const;

    // Empty, with shards for a cluster of about `services` Services.
    explicit Zone(size_t services);
    Fragment apex_fragment() const;
    // `only`: the one name wanted (a lookup), or null for every name.
    Fragment service_fragment(const AppliedService& applied, bool report,
                              const std::string* only = nullptr) const;
    // The names a Service owns (zone.h's header) are written when asked
    // (find, for_each_name) from its entry in services_, not kept in names_,
    // unless it is headless: a headless Service names each endpoint, which
    // makes its fragment as large as its slices.
    static bool written_when_asked(const watch::Service& service);
    // The Service (namespace, name) owning `lower_name`: a name under
    // svc_zone_ with at least two labels above it (the Service's name, its
    // SRV names and their _proto parents, a headless Service's endpoint
    // names), which no other Service's fragment holds.
    std::optional<std::pair<std::string_view, std::string_view>> owner_of(
        std::string_view lower_name) const;
    // `service`: the Service the fragment is of (null: the apex).
    void apply(const Fragment& fragment, int delta, const watch::Service* service);
    void apply_service(const AppliedService& applied, int delta, bool report);
    // `entry` with what `programmed` says of it, when its names wait for rules.
    AppliedService applied_service(const ServiceEntryPtr& entry,
                                   const ProgrammedServices* programmed) const;
    // Whether the zone may hold more than its apex for `snapshot` (zone.h's header).
    static bool publishable(const watch::Snapshot& snapshot, const ZoneConfig& config,
                            const ProgrammedServices* programmed);
    void apply_slice(const watch::ObjectKey& key, const SlicePtr& slice, int delta);
    void count(ShardedMap<std::string, uint32_t>& counts, const std::string& key, int delta);
    void set_serial(const watch::Snapshot& snapshot, bool publishable);

    ZoneConfig config_;
    std::string origin_;
    std::string svc_zone_;
    bool synced_ = false;
    uint32_t serial_ = 0;
    Record soa_;
    // By reverse_key() or the name. A built zone keeps its reverse names in
    // reverse_ instead; a zone of the warm state, which knows no objects,
    // here.
    ShardedMap<std::string, Name> names_;
    AddressIndex<ReverseSource> reverse_;
    // The names owned by the Services written when asked, which names_
    // does not hold (name_count() counts them).
    size_t owned_names_ = 0;
    // What the records were made from, per key: update() takes these out.
    ShardedMap<KeyRef, AppliedService, KeyRefHash> services_;
    ShardedMap<KeyRef, SlicePtr, KeyRefHash> slices_;
    // "ns/" + address bytes -> slices naming it; kVerified only.
    ShardedMap<std::string, uint32_t> pods_;
    ShardedMap<std::string, uint32_t> namespaces_;  // -> Services and slices in it
};

}  // namespace sb::dns
