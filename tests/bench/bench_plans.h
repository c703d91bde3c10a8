// The plans the backend benches sync: `services` service ports of one
// Service each in 10.96.0.0/12, `endpoints` endpoints each with an address
// of its own in 10.128.0.0/9 (so the hairpin set has services x endpoints
// elements), every 10th endpoint on this node and every 10th service with a
// NodePort. Sorted as a Plan promises. Header-only; for tests/bench.
#pragma once

#include <string>
#include <tuple>
#include <utility>

#include "rules/plan.h"

namespace sb::bench {

inline rules::Plan make_bench_plan(int services, int endpoints,
                                   rules::Protocol protocol = rules::Protocol::kTCP) {
    rules::Plan plan;
    plan.node = "node-0";
    for (int i = 0; i < services; ++i) {
        rules::ServicePortPlan p;
        p.ns = "ns-" + std::to_string(i % 50);
        p.service = "svc-" + std::to_string(i);
        p.port_name = "http";
        p.protocol = protocol;
        p.cluster_ips = {IpAddress::v4(0x0a600000u + static_cast<uint32_t>(i) + 10)};
        p.port = 80;
        if (i % 10 == 0) p.node_port = static_cast<uint16_t>(30000 + (i / 10) % 2700);
        for (int e = 0; e < endpoints; ++e) {
            rules::Endpoint ep;
            ep.ip = IpAddress::v4(0x0a800000u + static_cast<uint32_t>(i * endpoints + e) + 2);
            ep.port = 8080;
            ep.ready = ep.serving = true;
            ep.node_name = "node-" + std::to_string(e % 10);
            ep.is_local = e % 10 == 0;
            p.cluster_endpoints.push_back(ep);
            if (ep.is_local) p.local_endpoints.push_back(ep);
        }
        plan.services.push_back(std::move(p));
    }
    plan.services.sort([](const auto& a, const auto& b) {
        return std::tie(a.ns, a.service, a.port_name, a.protocol) <
               std::tie(b.ns, b.service, b.port_name, b.protocol);
    });
    return plan;
}

}  // namespace sb::bench
