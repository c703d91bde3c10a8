// The zone the DNS fuzz targets answer from: a dual-stack ClusterIP
// Service (web), a headless one with 40 named endpoints (nginx) and an
// ExternalName (ext) pointing into the zone.
#pragma once

#include <memory>
#include <string>

#include "dns/zone/zone.h"
#include "watch/snapshot_builder.h"

namespace sb {

inline std::shared_ptr<const dns::Zone> make_fuzz_zone() {
    watch::SnapshotBuilder snapshot;
    snapshot.synced(true).generation(7);
    watch::Service web;
    web.meta.ns = "default";
    web.meta.name = "web";
    web.cluster_ips = {*IpAddress::parse("10.96.0.10"), *IpAddress::parse("fd00::10")};
    web.ports = {watch::ServicePort{"http", watch::Protocol::kTCP, 80, {}, 0}};
    snapshot.add(web);
    watch::Service nginx;
    nginx.meta.ns = "default";
    nginx.meta.name = "nginx";
    nginx.headless = true;
    snapshot.add(nginx);
    watch::EndpointSlice slice;
    slice.meta.ns = "default";
    slice.meta.name = "nginx-1";
    slice.service_name = "nginx";
    for (int i = 1; i <= 40; ++i) {
        watch::Endpoint e;
        e.addresses = {IpAddress::v4(0x0af40000u + static_cast<uint32_t>(i))};
        e.hostname = "web-" + std::to_string(i);
        e.target_ref = watch::ObjectReference{"Pod", "default", e.hostname};
        slice.endpoints.push_back(e);
    }
    slice.ports = {watch::EndpointPort{"http", watch::Protocol::kTCP, 8080}};
    snapshot.add(slice);
    watch::Service ext;
    ext.meta.ns = "default";
    ext.meta.name = "ext";
    ext.type = watch::ServiceType::kExternalName;
    ext.external_name = "web.default.svc.cluster.local";
    snapshot.add(ext);
    return *dns::Zone::build(*snapshot.build(), dns::ZoneConfig{});
}

}  // namespace sb
