#include "dns/zone/zone.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <optional>
#include <set>

#include "base/log.h"
#include "watch/decode/syntax.h"

namespace sb::dns {

namespace {

constexpr uint32_t kSoaRefresh = 7200;
constexpr uint32_t kSoaRetry = 1800;
constexpr uint32_t kSoaExpire = 86400;
constexpr const char* kSpecVersion = "1.1.0";

std::string lower_text(std::string_view text) {
    std::string out(text);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    }
    return out;
}

const char* proto_label(watch::Protocol protocol) {
    switch (protocol) {
        case watch::Protocol::kTCP:
            return "_tcp";
        case watch::Protocol::kUDP:
            return "_udp";
        case watch::Protocol::kSCTP:
            return "_sctp";
    }
    return "_tcp";
}

// Collects the records of one fragment, then hands them over as the zone's
// own Node type (sorted, unique, sized exactly). Every name under the
// origin brings its ancestors up to the origin (empty non-terminals) when
// first added.
class Builder {
  public:
    // `report`: log what is skipped (false when rebuilding the records an
    // update takes out, which were reported when they went in). `only`: the
    // one name wanted (a lookup, Zone::find), without its ancestors or any
    // reverse name (it exists, maybe as an empty non-terminal, when an added
    // name is it or under it); null: every name.
    Builder(std::string origin, bool report, const std::string* only = nullptr)
        : origin_(std::move(origin)), report_(report), only_(only) {}
    bool report() const { return report_; }
    bool wants_reverse() const { return only_ == nullptr; }

    // A name that exists even without records (with its ancestors).
    std::vector<std::pair<uint16_t, std::string>>& add_name(const std::string& name) {
        auto [it, inserted] = records_.try_emplace(name);
        if (inserted && !only_ && name_is_under(name, origin_)) add_ancestors(name);
        return it->second;
    }
    void add(const std::string& name, uint16_t rtype, std::string rdata) {
        if (only_ && name != *only_) {
            // The wanted name exists as an ancestor (an empty non-terminal).
            if (name_is_under(name, *only_)) records_.try_emplace(*only_);
            return;
        }
        add_name(name).emplace_back(rtype, std::move(rdata));
    }
    void add_address(const std::string& name, const IpAddress& address) {
        add(name, address.is_v4() ? type::kA : type::kAAAA, rdata_address(address));
    }
    // The reverse name of `address`, naming `endpoint` (null: the Service).
    void add_reverse(const IpAddress& address, const watch::Endpoint* endpoint) {
        if (wants_reverse()) reverse_.emplace_back(address, endpoint);
    }

    // The names into `nodes`: RRsets ordered by type, rdatas sorted and
    // unique, each brought once; the reverse names into `reverse`.
    void finish(std::unordered_map<std::string, Zone::Node>& nodes,
                std::vector<std::pair<IpAddress, const watch::Endpoint*>>& reverse) {
        nodes.reserve(records_.size());
        for (auto& [name, records] : records_) {
            std::sort(records.begin(), records.end());
            records.erase(std::unique(records.begin(), records.end()), records.end());
            std::vector<Zone::RRset> rrsets;
            for (size_t i = 0; i < records.size();) {
                size_t end = i;
                while (end < records.size() && records[end].first == records[i].first) ++end;
                std::vector<Zone::Rdata> rdatas;
                rdatas.reserve(end - i);
                for (size_t j = i; j < end; ++j) {
                    rdatas.push_back(Zone::Rdata{std::move(records[j].second), 1});
                }
                rrsets.push_back(
                    Zone::RRset{records[i].first, Zone::Rdatas{OneOrMany(std::move(rdatas))}});
                i = end;
            }
            nodes.emplace(name, Zone::Node{OneOrMany(std::move(rrsets))});
        }
        reverse = std::move(reverse_);
    }

  private:
    // An ancestor already present has its own ancestors already.
    void add_ancestors(std::string_view name) {
        while (name.size() > origin_.size()) {
            name = name_parent(name);
            if (!records_.try_emplace(std::string(name)).second) return;
        }
    }

    std::string origin_;
    bool report_;
    const std::string* only_;
    // name -> (type, rdata), in the order added.
    std::unordered_map<std::string, std::vector<std::pair<uint16_t, std::string>>> records_;
    std::vector<std::pair<IpAddress, const watch::Endpoint*>> reverse_;
};

// "label." + parent wire; error when the label is not a valid DNS label.
Result<std::string> child(std::string_view label, std::string_view parent) {
    if (label.empty() || label.size() > kMaxLabelLength) {
        return make_error(ErrorCode::kInvalidArgument,
                          fmt::format("invalid DNS label \"{}\"", label));
    }
    std::string out;
    out.push_back(static_cast<char>(label.size()));
    out += lower_text(label);
    out.append(parent);
    if (out.size() > kMaxNameLength) {
        return make_error(ErrorCode::kInvalidArgument, "DNS name over 255 bytes");
    }
    return out;
}

// The name of an endpoint: its hostname, else (endpoint_pod_names) its
// targetRef's name when that is a DNS label, else its dashed address.
std::string endpoint_host(const watch::Endpoint& endpoint, const IpAddress& address,
                          bool pod_names) {
    if (!endpoint.hostname.empty()) return endpoint.hostname;
    if (pod_names && endpoint.target_ref && watch::is_dns_label(endpoint.target_ref.name())) {
        return std::string(endpoint.target_ref.name());
    }
    return dashed_address(address);
}

// The wire name of a Service: "name.ns." + svc_zone; error when the
// namespace or the name is no valid DNS label.
Result<std::string> service_name(const watch::Service& service, const std::string& svc_zone) {
    auto ns_name = child(service.meta.ns, svc_zone);
    if (!ns_name) return ns_name;
    return child(service.meta.name, *ns_name);
}

// Calls f(slice, endpoint, address, endpoint_name) for every address of every ready
// endpoint of the entry's address slices, endpoint_name its wire name under
// `svc_name`. Ready is the EndpointSlice condition, into which the
// EndpointSlice controller already folds publishNotReadyAddresses. An
// endpoint whose name is no valid DNS label is skipped (and logged when the
// builder reports).
template <typename F>
void for_each_ready_address(const Builder& b, const std::string& svc_name,
                            const watch::ServiceEntry& entry, bool pod_names, F&& f) {
    for (const auto& slice : entry.slices) {
        if (slice->address_type == watch::AddressType::kFQDN) continue;
        for (const auto& endpoint : slice->endpoints) {
            if (!endpoint.ready) continue;
            for (const auto& address : endpoint.addresses) {
                auto endpoint_name = child(endpoint_host(endpoint, address, pod_names), svc_name);
                if (!endpoint_name) {
                    if (b.report())
                        log::warn("dns: skipping endpoint {} of {}: {}", address,
                                  entry.service->meta.key().to_string(),
                                  endpoint_name.error().describe());
                    continue;
                }
                f(*slice, endpoint, address, *endpoint_name);
            }
        }
    }
}

// A headless Service: A/AAAA for the Service and each endpoint name, the
// endpoints' PTRs, SRV per named port of the slices.
void add_headless(Builder& b, const std::string& svc_name, const watch::ServiceEntry& entry,
                  bool pod_names) {
    // SRV name -> (port, host) pairs.
    std::map<std::string, std::set<std::pair<uint16_t, std::string>>> srv;
    for_each_ready_address(b, svc_name, entry, pod_names,
                           [&](const watch::EndpointSlice& slice, const watch::Endpoint& endpoint,
                               const IpAddress& address, const std::string& endpoint_name) {
                               b.add_address(svc_name, address);
                               b.add_address(endpoint_name, address);
                               b.add_reverse(address, &endpoint);
                               for (const auto& port : slice.ports) {
                                   if (port.name.empty() || !port.port) continue;
                                   auto proto = child(proto_label(port.protocol), svc_name);
                                   if (!proto) continue;
                                   auto srv_name = child("_" + port.name, *proto);
                                   if (!srv_name) continue;
                                   srv[*srv_name].insert({*port.port, endpoint_name});
                               }
                           });
    for (const auto& [name, targets] : srv) {
        uint16_t weight = static_cast<uint16_t>(100 / targets.size());
        for (const auto& [port, target] : targets) {
            b.add(name, type::kSRV, rdata_srv(0, weight, port, target));
        }
    }
}

// Whether `address` is one the node answers DNS on itself (no rules).
bool answered_locally(const IpAddress& address, const ZoneConfig& config) {
    const auto& local = config.local_dns_addresses;
    return std::find(local.begin(), local.end(), address) != local.end();
}

// Whether the Service's names wait for its rules: the proxy programs it
// (the planner's own test, watch::proxied_by_default_proxy) and it has
// ports and a ClusterIP the node does not answer on itself.
bool waits_for_rules(const watch::Service& service, const ZoneConfig& config) {
    if (!config.publish_after_programming || !watch::proxied_by_default_proxy(service)) {
        return false;
    }
    if (service.ports.empty()) return false;
    return std::any_of(service.cluster_ips.begin(), service.cluster_ips.end(),
                       [&](const IpAddress& ip) { return !answered_locally(ip, config); });
}

// Precondition: entry.service is set. `gated`: the Service's names wait
// for its rules, of which the kernel serves `programmed` (null: none).
void add_service(Builder& b, const std::string& svc_zone, const watch::ServiceEntry& entry,
                 const ZoneConfig& config, bool gated, const ProgrammedService* programmed) {
    const watch::Service& service = *entry.service;
    auto svc_name = service_name(service, svc_zone);
    if (!svc_name) return;
    if (service.type == watch::ServiceType::kExternalName) {
        auto target = name_from_text(service.external_name);
        if (!target) {
            if (b.report())
                log::warn("dns: skipping ExternalName {}: {}", service.meta.key().to_string(),
                          target.error().describe());
            return;
        }
        b.add(*svc_name, type::kCNAME, name_lower(*target));
        return;
    }
    if (service.headless) {
        if (config.endpoints) add_headless(b, *svc_name, entry, config.endpoint_pod_names);
        return;
    }
    if (service.cluster_ips.empty()) return;  // not allocated yet: no name
    for (const auto& ip : service.cluster_ips) {
        if (gated && !answered_locally(ip, config) &&
            !(programmed && programmed->has_cluster_ip(ip))) {
            continue;
        }
        b.add_address(*svc_name, ip);
        b.add_reverse(ip, nullptr);
    }
    // The reverse names of its ready endpoints, as CoreDNS answers them; the
    // endpoint names themselves are published for headless Services only.
    if (config.endpoints && (!gated || programmed) && b.wants_reverse()) {
        for_each_ready_address(b, *svc_name, entry, config.endpoint_pod_names,
                               [&b](const watch::EndpointSlice&, const watch::Endpoint& endpoint,
                                    const IpAddress& address,
                                    const std::string&) { b.add_reverse(address, &endpoint); });
    }
    for (const auto& port : service.ports) {
        if (port.name.empty()) continue;
        if (gated && !(programmed && programmed->has_port(port))) continue;
        auto proto = child(proto_label(port.protocol), *svc_name);
        if (!proto) continue;
        auto srv_name = child("_" + port.name, *proto);
        if (!srv_name) continue;
        b.add(*srv_name, type::kSRV, rdata_srv(0, 100, port.port, *svc_name));
    }
}

}  // namespace

const Zone::RRset* Zone::Node::find(uint16_t rtype) const {
    for (const auto& rrset : rrsets) {
        if (rrset.rtype == rtype) return &rrset;
    }
    return nullptr;
}

// Shard counts: a few dozen names or addresses per shard (a ClusterIP
// Service with 10 endpoints has 3 or 4 names and 11 reverse names), so a
// one-Service write copies little, and a zone copy costs some thousand
// pointer copies. They grow with the cluster a zone is built for: at 4096
// name shards, 50k Services put ~170 names in each, and every change copied
// five times what it did at 10k (issue 26). A derived zone keeps its base's.
constexpr size_t kMinNameShards = 4096;
constexpr size_t kMinObjectShards = 1024;
constexpr size_t kMaxShards = size_t{1} << 17;

size_t shards_for(size_t objects, size_t per_shard, size_t at_least) {
    return std::clamp(std::bit_ceil(objects / per_shard + 1), at_least, kMaxShards);
}

Zone::Zone(size_t services)
    : names_(shards_for(services, 3, kMinNameShards)),
      reverse_(shards_for(services, 4, kMinNameShards)),
      services_(shards_for(services, 16, kMinObjectShards)),
      slices_(shards_for(services, 16, kMinObjectShards)),
      pods_(kMinObjectShards),
      namespaces_(kMinObjectShards) {}

bool Zone::publishable(const watch::Snapshot& snapshot, const ZoneConfig& config,
                       const ProgrammedServices* programmed) {
    if (!snapshot.synced()) return false;
    return !config.publish_after_programming || (programmed && programmed->reported());
}

Zone::AppliedService Zone::applied_service(const ServiceEntryPtr& entry,
                                           const ProgrammedServices* programmed) const {
    AppliedService applied{entry, nullptr};
    if (programmed && waits_for_rules(*entry->service, config_)) {
        applied.programmed = programmed->find(entry->service->meta.key());
    }
    return applied;
}

Result<std::shared_ptr<const Zone>> Zone::build(const watch::Snapshot& snapshot,
                                                const ZoneConfig& config,
                                                const ProgrammedServices* programmed) {
    auto origin = name_from_text(config.domain);
    if (!origin) return origin.error();
    std::shared_ptr<Zone> zone(new Zone(snapshot.services().size()));
    zone->config_ = config;
    zone->origin_ = name_lower(*origin);
    zone->svc_zone_ = *child("svc", zone->origin_);
    const bool publish = publishable(snapshot, config, programmed);
    zone->set_serial(snapshot, publish);
    zone->apply(zone->apex_fragment(), +1, nullptr);
    if (!publish) return std::shared_ptr<const Zone>(std::move(zone));  // see zone.h
    for (const auto& [key, entry] : snapshot.services()) {
        if (entry->service) zone->apply_service(zone->applied_service(entry, programmed), +1, true);
    }
    // Every slice, labelled or not: each names its namespace and its Pods.
    for (const auto& [key, slice] : snapshot.endpoint_slices()) zone->apply_slice(key, slice, +1);
    zone->reverse_.shrink_to_fit();
    return std::shared_ptr<const Zone>(std::move(zone));
}

std::shared_ptr<const Zone> Zone::update(const watch::Snapshot& snapshot,
                                         const std::vector<watch::Change>& changes,
                                         const ProgrammedServices* programmed) const {
    // An unsynced side holds only the apex: nothing to share with the
    // other, so the zone is built afresh (the domain was valid for this one).
    if (!synced_ || !publishable(snapshot, config_, programmed)) {
        return *build(snapshot, config_, programmed);
    }
    std::vector<watch::ObjectKey> services;
    std::vector<watch::ObjectKey> slices;
    for (const auto& change : changes) {
        if (change.kind == watch::Kind::kNode || change.kind == watch::Kind::kPod) continue;
        if (!change.service.name.empty()) services.push_back(change.service);
        if (change.kind == watch::Kind::kEndpointSlice) slices.push_back(change.key);
    }
    for (auto* keys : {&services, &slices}) {
        std::sort(keys->begin(), keys->end());
        keys->erase(std::unique(keys->begin(), keys->end()), keys->end());
    }
    // Copies shard pointers; the writes below copy the shards they touch.
    auto zone = std::make_shared<Zone>(*this);
    zone->apply(apex_fragment(), -1, nullptr);
    zone->set_serial(snapshot, true);
    zone->apply(zone->apex_fragment(), +1, nullptr);
    for (const auto& key : services) {
        const AppliedService* applied = services_.find(KeyRef(key));
        const AppliedService before = applied ? *applied : AppliedService{};
        const ServiceEntryPtr* found = snapshot.services().find(key);
        const AppliedService after =
            found && (*found)->service ? applied_service(*found, programmed) : AppliedService{};
        if (before == after) continue;
        if (before.entry) zone->apply_service(before, -1, false);
        if (after.entry) zone->apply_service(after, +1, true);
    }
    for (const auto& key : slices) {
        const SlicePtr* applied = slices_.find(KeyRef(key));
        const SlicePtr before = applied ? *applied : nullptr;
        const SlicePtr* found = snapshot.endpoint_slices().find(key);
        SlicePtr after = found ? *found : nullptr;
        if (before == after) continue;
        if (before) zone->apply_slice(key, before, -1);
        if (after) zone->apply_slice(key, after, +1);
    }
    return zone;
}

void Zone::set_serial(const watch::Snapshot& snapshot, bool publishable) {
    synced_ = publishable;
    serial_ = static_cast<uint32_t>(snapshot.generation());
    soa_ = soa_for(origin_);
}

Zone::Fragment Zone::apex_fragment() const {
    const std::string& o = origin_;
    Builder b(o, true);
    b.add(o, type::kSOA, soa_.rdata);
    b.add(o, type::kNS, *child("ns", *child("dns", o)));
    b.add(*child("dns-version", o), type::kTXT, rdata_txt({kSpecVersion}));
    b.add_name(svc_zone_);  // "svc" exists even with no Service
    if (config_.pods != PodRecords::kDisabled) b.add_name(*child("pod", o));
    Fragment fragment;
    b.finish(fragment.names, fragment.reverse);
    return fragment;
}

Zone::Fragment Zone::service_fragment(const AppliedService& applied, bool report,
                                      const std::string* only) const {
    Builder b(origin_, report, only);
    add_service(b, svc_zone_, *applied.entry, config_,
                waits_for_rules(*applied.entry->service, config_), applied.programmed.get());
    Fragment fragment;
    b.finish(fragment.names, fragment.reverse);
    return fragment;
}

// In names_, the reverse name of a whole address is keyed by a marker byte
// and the address bytes (5 bytes, in place, for IPv4, instead of a wire
// name of 22 to 29 bytes on the heap; 17 for IPv6 instead of 74), since a
// zone of the warm state holds one per ClusterIP and endpoint address (a
// built zone keeps them in reverse_; reverse_key() gives that key, or none
// for any other name, which is its own key). A wire name never starts with
// 0xfe or 0xff (a label is at most 63 bytes), so keys cannot collide.
constexpr char kV4ReverseKey = '\xff';
constexpr char kV6ReverseKey = '\xfe';

std::optional<IpAddress> Zone::reverse_address(std::string_view lower_name) {
    if (!lower_name.ends_with(std::string_view("\4arpa\0", 6))) return std::nullopt;
    // The labels (the address's least significant first, then in-addr.arpa
    // or ip6.arpa); `rest` is the root when they were all of them.
    std::array<std::string_view, 34> labels;
    size_t count = 0;
    std::string_view rest = lower_name;
    while (rest.size() > 1 && count < labels.size()) {
        size_t length = static_cast<uint8_t>(rest.front());
        if (length + 1 > rest.size()) return std::nullopt;
        labels[count++] = rest.substr(1, length);
        rest.remove_prefix(length + 1);
    }
    if (rest.size() != 1) return std::nullopt;
    if (count == 6 && labels[4] == "in-addr" && labels[5] == "arpa") {
        uint8_t bytes[4];
        for (int i = 0; i < 4; ++i) {
            const std::string_view label = labels[static_cast<size_t>(3 - i)];
            if (label.empty() || label.size() > 3 ||
                label.find_first_not_of("0123456789") != label.npos) {
                return std::nullopt;
            }
            int value = std::stoi(std::string(label));
            if (value > 255) return std::nullopt;
            bytes[i] = static_cast<uint8_t>(value);
        }
        IpAddress address = IpAddress::from_bytes(IpFamily::kV4, bytes);
        // Only the canonical spelling (no leading zeros) is the address's name.
        if (reverse_name(address) != lower_name) return std::nullopt;
        return address;
    }
    if (count == 34 && labels[32] == "ip6" && labels[33] == "arpa") {
        static const std::string_view kHex = "0123456789abcdef";
        uint8_t bytes[16];
        for (int i = 0; i < 16; ++i) {
            const std::string_view low = labels[static_cast<size_t>(30 - 2 * i)];
            const std::string_view high = labels[static_cast<size_t>(31 - 2 * i)];
            if (low.size() != 1 || high.size() != 1 || kHex.find(low[0]) == kHex.npos ||
                kHex.find(high[0]) == kHex.npos) {
                return std::nullopt;
            }
            bytes[i] = static_cast<uint8_t>(kHex.find(high[0]) << 4 | kHex.find(low[0]));
        }
        IpAddress address = IpAddress::from_bytes(IpFamily::kV6, bytes);
        if (reverse_name(address) != lower_name) return std::nullopt;
        return address;
    }
    return std::nullopt;
}

std::optional<std::string> Zone::reverse_key(std::string_view lower_name) {
    const std::optional<IpAddress> address = reverse_address(lower_name);
    if (!address) return std::nullopt;
    const char marker = address->is_v4() ? kV4ReverseKey : kV6ReverseKey;
    return std::string(1, marker) +
           std::string(reinterpret_cast<const char*>(address->bytes()), address->size());
}

std::string Zone::name_of_key(const std::string& key) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(key.data() + 1);
    if (key.size() == 5 && key[0] == kV4ReverseKey) {
        return reverse_name(IpAddress::from_bytes(IpFamily::kV4, bytes));
    }
    if (key.size() == 17 && key[0] == kV6ReverseKey) {
        return reverse_name(IpAddress::from_bytes(IpFamily::kV6, bytes));
    }
    return key;
}

// Adds (delta +1) or takes out (-1) a fragment; taking out is only ever
// done with a fragment added before, so the counts never go below zero.
// A fragment's names are never reverse names (those are in its `reverse`),
// so each is its own key.
void Zone::apply(const Fragment& fragment, int delta, const watch::Service* service) {
    for (const auto& [address, endpoint] : fragment.reverse) {
        if (delta > 0) {
            reverse_.add(address, ReverseSource{service, endpoint});
        } else {
            reverse_.erase_if(address,
                              [service](const ReverseSource& s) { return s.service == service; });
        }
    }
    const bool asked = service && written_when_asked(*service);
    for (const auto& [key, node] : fragment.names) {
        if (asked && owner_of(key)) {
            owned_names_ += delta;
            continue;
        }
        bool added = false;
        Name& stored = names_.writable(key, added);
        stored.owners += delta;
        if (stored.owners == 0) {
            names_.erase(key);
            continue;
        }
        if (added) {  // delta is +1: the fragment's records, each brought once
            stored.node = node;
            continue;
        }
        auto& rrsets = stored.node.rrsets;
        for (const auto& rrset : node.rrsets) {
            auto at =
                std::lower_bound(rrsets.begin(), rrsets.end(), rrset.rtype,
                                 [](const RRset& r, uint16_t rtype) { return r.rtype < rtype; });
            size_t i = static_cast<size_t>(at - rrsets.begin());
            if (at == rrsets.end() || at->rtype != rrset.rtype) {
                if (delta > 0) rrsets.insert(i, rrset);
                continue;
            }
            auto& entries = rrsets[i].rdatas.entries;
            for (const auto& rdata : rrset.rdatas.entries) {
                auto pos = std::lower_bound(entries.begin(), entries.end(), rdata.bytes,
                                            [](const Rdata& entry, const std::string& bytes) {
                                                return entry.bytes < bytes;
                                            });
                size_t j = static_cast<size_t>(pos - entries.begin());
                if (pos != entries.end() && pos->bytes == rdata.bytes) {
                    pos->owners += delta;
                    if (pos->owners == 0) entries.erase(j);
                } else if (delta > 0) {
                    entries.insert(j, rdata);
                }
            }
            if (entries.empty()) rrsets.erase(i);
        }
    }
}

void Zone::count(ShardedMap<std::string, uint32_t>& counts, const std::string& key, int delta) {
    bool added = false;
    uint32_t& n = counts.writable(key, added);
    n += delta;
    if (n == 0) counts.erase(key);
}

// Precondition: applied.entry->service is set. Taking a Service out uses
// what it was added with, so the fragment is the one added.
void Zone::apply_service(const AppliedService& applied, int delta, bool report) {
    const watch::ObjectKey key = applied.entry->service->meta.key();
    apply(service_fragment(applied, report), delta, applied.entry->service.get());
    count(namespaces_, lower_text(key.ns), delta);
    services_.erase(KeyRef(key));
    if (delta > 0) services_.set(KeyRef(applied.entry->service->meta), applied);
}

void Zone::apply_slice(const watch::ObjectKey& key, const SlicePtr& slice, int delta) {
    count(namespaces_, lower_text(key.ns), delta);
    // Only --dns-pods=verified asks pod_known(): at 100k endpoints the table
    // would cost every other zone ~7 MB that nothing reads.
    if (config_.pods == PodRecords::kVerified) {
        for (const auto& endpoint : slice->endpoints) {
            if (!endpoint.target_ref || endpoint.target_ref.kind() != "Pod") continue;
            const Symbol ref_ns = endpoint.target_ref.ns();
            const std::string& ns = ref_ns.empty() ? key.ns : ref_ns.str();
            for (const auto& address : endpoint.addresses) {
                count(pods_, lower_text(ns) + "/" + rdata_address(address), delta);
            }
        }
    }
    slices_.erase(KeyRef(key));
    if (delta > 0) slices_.set(KeyRef(slice->meta), slice);
}

Record Zone::soa_for(std::string_view origin) const {
    std::string apex(origin);
    // An apex too long for the prefixes names itself (the names stay valid).
    auto dns = child("dns", apex);
    auto ns_name = dns ? child("ns", *dns) : dns;
    auto hostmaster = child("hostmaster", apex);
    return Record{apex, type::kSOA, kClassIN, config_.ttl,
                  rdata_soa(ns_name ? *ns_name : apex, hostmaster ? *hostmaster : apex, serial_,
                            kSoaRefresh, kSoaRetry, kSoaExpire, config_.ttl)};
}

bool Zone::written_when_asked(const watch::Service& service) {
    return !service.headless;
}

std::optional<std::pair<std::string_view, std::string_view>> Zone::owner_of(
    std::string_view lower_name) const {
    if (!name_is_under(lower_name, svc_zone_)) return std::nullopt;
    // The labels above svc_zone_, first to last; the last is the namespace,
    // the one before it the Service's name.
    std::string_view above = lower_name.substr(0, lower_name.size() - svc_zone_.size());
    std::string_view previous;
    std::string_view last;
    size_t labels = 0;
    while (!above.empty()) {
        const size_t length = static_cast<uint8_t>(above.front());
        if (length + 1 > above.size()) return std::nullopt;
        previous = last;
        last = above.substr(1, length);
        above.remove_prefix(length + 1);
        ++labels;
    }
    if (labels < 2) return std::nullopt;
    return std::make_pair(last, previous);
}

Zone::NodeRef Zone::find(std::string_view lower_name) const {
    if (const auto owner = owner_of(lower_name)) {
        const watch::ObjectKey service{std::string(owner->first), std::string(owner->second)};
        const AppliedService* applied = services_.find(KeyRef(service));
        if (applied && written_when_asked(*applied->entry->service)) {
            const std::string name(lower_name);
            Fragment fragment = service_fragment(*applied, false, &name);
            auto it = fragment.names.find(name);
            if (it == fragment.names.end()) return NodeRef();
            return NodeRef(std::move(it->second));
        }
    }
    std::optional<std::string> key;
    if (const std::optional<IpAddress> address = reverse_address(lower_name)) {
        std::vector<ReverseSource> sources;
        reverse_.for_each_at(*address,
                             [&sources](const ReverseSource& s) { sources.push_back(s); });
        if (!sources.empty()) return NodeRef(reverse_node(*address, sources));
        key = reverse_key(lower_name);
    }
    const Name* name = names_.find(key ? *key : std::string(lower_name));
    return name ? NodeRef(&name->node) : NodeRef();
}

Zone::Node Zone::reverse_node(const IpAddress& address,
                              const std::vector<ReverseSource>& sources) const {
    // (target, Service): sorted, so each target's Services are adjacent.
    std::vector<std::pair<std::string, const watch::Service*>> targets;
    targets.reserve(sources.size());
    for (const ReverseSource& source : sources) {
        // Both names were valid when the source was added (add_service).
        auto target = service_name(*source.service, svc_zone_);
        if (target && source.endpoint) {
            target = child(endpoint_host(*source.endpoint, address, config_.endpoint_pod_names),
                           *target);
        }
        if (target) targets.emplace_back(std::move(*target), source.service);
    }
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    std::vector<Rdata> rdatas;
    for (auto& [target, service] : targets) {
        if (!rdatas.empty() && rdatas.back().bytes == target) {
            ++rdatas.back().owners;
        } else {
            rdatas.push_back(Rdata{std::move(target), 1});
        }
    }
    std::vector<RRset> rrsets;
    rrsets.push_back(RRset{type::kPTR, Rdatas{OneOrMany(std::move(rdatas))}});
    return Node{OneOrMany(std::move(rrsets))};
}

bool Zone::pod_known(std::string_view ns, const IpAddress& address) const {
    std::string key(ns);
    key += '/';
    key += rdata_address(address);
    return pods_.find(key) != nullptr;
}

bool Zone::namespace_known(std::string_view ns) const {
    return namespaces_.find(std::string(ns)) != nullptr;
}

}  // namespace sb::dns
