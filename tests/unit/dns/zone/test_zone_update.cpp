// Zone::update against the reference: over random Store writes, the zone
// derived change by change answers exactly as a full build of the same
// snapshot (every name, RRset and rdata; pod and namespace knowledge); so
// does a zone restored from its warm state's bytes; and find() answers every
// name the zone lists, with its records.
#include <algorithm>
#include <catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"
#include "watch/store.h"

namespace sb::dns {
namespace {

using watch::Change;

// Every record as one sorted line each: owner, type, rdata (hex).
std::vector<std::string> canonical_dump(const Zone& zone) {
    static const char* kHex = "0123456789abcdef";
    auto hex = [](const std::string& bytes) {
        std::string out;
        for (unsigned char c : bytes) {
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 0x0f]);
        }
        return out;
    };
    std::vector<std::string> lines;
    zone.for_each_name([&](const std::string& name, const Zone::Node& node) {
        lines.push_back(hex(name) + " exists");
        for (const auto& rrset : node.rrsets) {
            for (const auto& rdata : rrset.rdatas) {
                lines.push_back(hex(name) + " " + std::to_string(rrset.rtype) + " " + hex(rdata));
            }
        }
    });
    std::sort(lines.begin(), lines.end());
    return lines;
}

std::vector<std::string> rdatas_of(const Zone::Rdatas& rdatas) {
    return {rdatas.begin(), rdatas.end()};
}

const std::vector<std::string> kNamespaces = {"a", "b", "c"};

// How many PTR rdatas point at an endpoint name of a ClusterIP Service
// (host.svc.ns.svc.cluster.local with svc not headless in `snapshot`).
size_t cluster_ip_endpoint_ptrs(const Zone& zone, const watch::Snapshot& snapshot) {
    size_t count = 0;
    zone.for_each_name([&](const std::string&, const Zone::Node& node) {
        const Zone::RRset* ptr = node.find(type::kPTR);
        if (!ptr) return;
        for (const auto& target : ptr->rdatas) {
            std::vector<std::string> labels;
            for (size_t pos = 0; pos < target.size() && target[pos] != 0;
                 pos += static_cast<uint8_t>(target[pos]) + 1) {
                labels.push_back(target.substr(pos + 1, static_cast<uint8_t>(target[pos])));
            }
            if (labels.size() != 6) continue;
            const auto* entry = snapshot.services().find(watch::ObjectKey{labels[2], labels[1]});
            if (entry && (*entry)->service && !(*entry)->service->headless) ++count;
        }
    });
    return count;
}

IpAddress pool_address(std::mt19937& rng, bool v6) {
    // Small pools, so that reverse names are shared between Services.
    uint32_t n = rng() % 6;
    if (v6) return *IpAddress::parse("fd00::" + std::to_string(n + 1));
    return IpAddress::v4(0x0a000000u + n);
}

watch::Service random_service(std::mt19937& rng) {
    watch::Service s;
    s.meta.ns = kNamespaces[rng() % kNamespaces.size()];
    s.meta.name = "s" + std::to_string(rng() % 6);
    switch (rng() % 4) {
        case 0:
            s.headless = true;
            break;
        case 1:
            s.type = watch::ServiceType::kExternalName;
            s.external_name = rng() % 2 ? "example.com" : "other.example.org";
            break;
        default:
            s.cluster_ips.push_back(pool_address(rng, false));
            if (rng() % 2) s.cluster_ips.push_back(pool_address(rng, true));  // dual-stack
            break;
    }
    s.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    if (rng() % 2) s.ports.push_back(watch::ServicePort{"dns", watch::Protocol::kUDP, 53, {}, 0});
    return s;
}

watch::EndpointSlice random_slice(std::mt19937& rng) {
    watch::EndpointSlice slice;
    slice.meta.ns = kNamespaces[rng() % kNamespaces.size()];
    slice.meta.name = "e" + std::to_string(rng() % 8);
    // Sometimes unlabelled, and labels move between Services.
    if (rng() % 5) slice.service_name = "s" + std::to_string(rng() % 6);
    bool v6 = rng() % 3 == 0;
    slice.address_type = v6 ? watch::AddressType::kIPv6 : watch::AddressType::kIPv4;
    for (uint32_t k = rng() % 4; k > 0; --k) {
        watch::Endpoint e;
        e.addresses = {pool_address(rng, v6)};
        e.ready = rng() % 4 != 0;
        if (rng() % 2) e.hostname = "h" + std::to_string(rng() % 3);
        if (rng() % 2) {
            e.target_ref = watch::ObjectReference{"Pod", rng() % 3 ? "" : "c",
                                                  "pod" + std::to_string(rng() % 4)};
        }
        slice.endpoints.push_back(e);
    }
    slice.ports.push_back(watch::EndpointPort{"http", watch::Protocol::kTCP, 8080});
    return slice;
}

void random_write(std::mt19937& rng, watch::Store& store) {
    switch (rng() % 5) {
        case 0:
        case 1:
            store.upsert(random_service(rng));
            break;
        case 2:
            store.upsert(random_slice(rng));
            break;
        case 3:
            store.remove(watch::Kind::kService, {kNamespaces[rng() % kNamespaces.size()],
                                                 "s" + std::to_string(rng() % 6)});
            break;
        default:
            store.remove(watch::Kind::kEndpointSlice, {kNamespaces[rng() % kNamespaces.size()],
                                                       "e" + std::to_string(rng() % 8)});
            break;
    }
}

// Every name the zone lists, find() finds with the same records, however the
// zone keeps it (its names table, the reverse index, or written when asked
// from its Service); name_count() counts each once.
void require_found(const Zone& zone) {
    size_t listed = 0;
    zone.for_each_name([&](const std::string& name, const Zone::Node& node) {
        ++listed;
        const Zone::NodeRef found = zone.find(name);
        REQUIRE(found);
        REQUIRE(found->rrsets.size() == node.rrsets.size());
        for (size_t i = 0; i < node.rrsets.size(); ++i) {
            REQUIRE(found->rrsets[i].rtype == node.rrsets[i].rtype);
            REQUIRE(rdatas_of(found->rrsets[i].rdatas) == rdatas_of(node.rrsets[i].rdatas));
        }
    });
    REQUIRE(listed == zone.name_count());
}

void require_same(const Zone& updated, const Zone& full) {
    REQUIRE(canonical_dump(updated) == canonical_dump(full));
    REQUIRE(updated.name_count() == full.name_count());
    REQUIRE(updated.serial() == full.serial());
    REQUIRE(updated.synced() == full.synced());
    for (const std::string ns : {"a", "b", "c", "d"}) {
        REQUIRE(updated.namespace_known(ns) == full.namespace_known(ns));
        for (uint32_t n = 0; n < 6; ++n) {
            for (const auto& address : {IpAddress::v4(0x0a000000u + n),
                                        *IpAddress::parse("fd00::" + std::to_string(n + 1))}) {
                REQUIRE(updated.pod_known(ns, address) == full.pod_known(ns, address));
            }
        }
    }
}

TEST_CASE("zone update: random changes give the zone a full build gives") {
    // Plain, endpoint_pod_names, and --dns-pods=verified (its Pod table).
    for (int variant = 0; variant < 3; ++variant) {
        ZoneConfig config;
        config.endpoint_pod_names = variant == 1;
        if (variant == 2) config.pods = PodRecords::kVerified;
        std::mt19937 rng(variant == 0 ? 11 : variant == 1 ? 7 : 13);
        watch::Store store;
        store.set_synced(true);
        std::vector<Change> pending;
        store.subscribe([&pending](const std::vector<Change>& changes) {
            pending.insert(pending.end(), changes.begin(), changes.end());
        });
        auto zone = *Zone::build(*store.snapshot(), config);
        size_t endpoint_ptrs = 0;
        for (int round = 0; round < 400; ++round) {
            // One to a few writes per update, as a coalesced burst.
            for (uint32_t writes = 1 + rng() % 3; writes > 0; --writes) random_write(rng, store);
            auto snapshot = store.snapshot();
            zone = zone->update(*snapshot, std::exchange(pending, {}));
            require_same(*zone, **Zone::build(*snapshot, config));
            require_found(*zone);
            endpoint_ptrs += cluster_ip_endpoint_ptrs(*zone, *snapshot);
            // The warm state (zone_state.cpp) keeps every record and table.
            if (round % 40 == 0) {
                auto restored = Zone::from_state_bytes(zone->state_bytes("id"), config, "id");
                REQUIRE(restored.ok());
                require_same(**restored, *zone);
            }
        }
        // The random walk reached Services of every kind sharing names, and
        // the reverse names of ClusterIP Services' endpoints.
        REQUIRE(zone->name_count() > 10);
        REQUIRE(endpoint_ptrs > 0);
    }
}

TEST_CASE("zone update: a change named only by a later list is applied then") {
    watch::Store store;
    store.set_synced(true);
    std::vector<Change> pending;
    store.subscribe([&pending](const std::vector<Change>& changes) {
        pending.insert(pending.end(), changes.begin(), changes.end());
    });
    watch::Service s;
    s.meta.ns = "a";
    s.meta.name = "web";
    s.cluster_ips = {IpAddress::v4(0x0a000001u)};
    store.upsert(s);
    auto zone = *Zone::build(*store.snapshot(), ZoneConfig{});
    pending.clear();
    s.cluster_ips = {IpAddress::v4(0x0a000002u)};
    store.upsert(s);
    // The snapshot has the change, the list does not yet (a notification
    // still on its way): the zone keeps what it applied.
    const std::string web = name_lower(*name_from_text("web.a.svc.cluster.local"));
    auto early = zone->update(*store.snapshot(), {});
    REQUIRE(rdatas_of(early->find(web)->find(type::kA)->rdatas) ==
            std::vector<std::string>{rdata_address(IpAddress::v4(0x0a000001u))});
    auto late = early->update(*store.snapshot(), pending);
    require_same(*late, **Zone::build(*store.snapshot(), ZoneConfig{}));
    REQUIRE(rdatas_of(late->find(web)->find(type::kA)->rdatas) ==
            std::vector<std::string>{rdata_address(IpAddress::v4(0x0a000002u))});
}

}  // namespace
TEST_CASE("zone: the Pod table is kept for --dns-pods=verified only") {
    watch::SnapshotBuilder snapshot;
    snapshot.synced(true);
    watch::EndpointSlice slice;
    slice.meta.ns = "a";
    slice.meta.name = "e";
    watch::Endpoint e;
    e.addresses = {IpAddress::v4(0x0a000001u)};
    e.target_ref = watch::ObjectReference{"Pod", "", "pod1"};
    slice.endpoints.push_back(e);
    snapshot.add(slice);
    auto built = snapshot.build();
    ZoneConfig config;
    config.pods = PodRecords::kVerified;
    auto verified = *Zone::build(*built, config);
    REQUIRE(verified->pod_known("a", IpAddress::v4(0x0a000001u)));
    REQUIRE_FALSE(verified->pod_known("a", IpAddress::v4(0x0a000002u)));
    REQUIRE_FALSE(verified->pod_known("b", IpAddress::v4(0x0a000001u)));
    for (PodRecords pods : {PodRecords::kInsecure, PodRecords::kDisabled}) {
        config.pods = pods;
        auto zone = *Zone::build(*built, config);
        REQUIRE_FALSE(zone->pod_known("a", IpAddress::v4(0x0a000001u)));
        REQUIRE(zone->namespace_known("a"));  // the slice still names its namespace
    }
}

TEST_CASE("zone: an unsynced snapshot gives the apex only; the first synced one a full zone") {
    watch::Store store;
    std::vector<Change> pending;
    store.subscribe([&pending](const std::vector<Change>& changes) {
        pending.insert(pending.end(), changes.begin(), changes.end());
    });
    auto apex_only = *Zone::build(*store.snapshot(), ZoneConfig{});
    const size_t apex_names = apex_only->name_count();
    watch::Service s;
    s.meta.ns = "a";
    s.meta.name = "web";
    s.cluster_ips = {IpAddress::v4(0x0a000001u)};
    s.ports.push_back(watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0});
    store.upsert(s);
    const std::string web = name_lower(*name_from_text("web.a.svc.cluster.local"));

    auto unsynced = apex_only->update(*store.snapshot(), std::exchange(pending, {}));
    REQUIRE_FALSE(unsynced->synced());
    REQUIRE(unsynced->name_count() == apex_names);
    REQUIRE(unsynced->find(web) == nullptr);
    REQUIRE(unsynced->find(unsynced->origin()) != nullptr);
    REQUIRE(unsynced->serial() == store.snapshot()->generation());
    require_same(*unsynced, **Zone::build(*store.snapshot(), ZoneConfig{}));

    // set_synced's notification names nothing: the records come anyway.
    store.set_synced(true);
    auto synced = unsynced->update(*store.snapshot(), std::exchange(pending, {}));
    REQUIRE(synced->synced());
    REQUIRE(rdatas_of(synced->find(web)->find(type::kA)->rdatas) ==
            std::vector<std::string>{rdata_address(IpAddress::v4(0x0a000001u))});
    require_same(*synced, **Zone::build(*store.snapshot(), ZoneConfig{}));
    REQUIRE(synced->name_count() > apex_names);
}

}  // namespace sb::dns
