#include "tests/unit/rules/ipvs/fake_kernel.h"

#include <cerrno>

#include <algorithm>

#include <fmt/format.h>

#include "rules/plan.h"

namespace sb::rules::ipvs::testing {

namespace {

std::vector<RealServer>::iterator find_destination(std::vector<RealServer>& destinations,
                                                   const RealServer& rs) {
    return std::find_if(destinations.begin(), destinations.end(),
                        [&](const RealServer& d) { return d.id() == rs.id(); });
}

}  // namespace

Result<IpvsState> FakeKernel::list() {
    requests_ += 1 + table_.size();
    if (list_errno_ != 0) {
        return make_error(ErrorCode::kKernel, "ipvs: list virtual servers", list_errno_);
    }
    return table_;
}

Result<std::vector<RealServer>> FakeKernel::list_destinations(const ServiceKey& key) {
    ++requests_;
    if (list_errno_ != 0) {
        return make_error(ErrorCode::kKernel, "ipvs: list real servers", list_errno_);
    }
    const auto service = table_.find(key);
    if (service == table_.end()) return std::vector<RealServer>{};
    return service->second.destinations;
}

Status FakeKernel::apply(const Op& op) {
    ++requests_;
    if (applies_until_failure_ != 0 && --applies_until_failure_ == 0) {
        return refuse(op, apply_errno_);
    }
    if (Status s = change(op); !s) return s;
    applied_.push_back(op);
    return {};
}

Status FakeKernel::refuse(const Op& op, int errno_value) {
    ++refused_;
    return make_error(ErrorCode::kKernel, "ipvs: " + describe(op), errno_value);
}

Status FakeKernel::change(const Op& op) {
    const auto service = table_.find(op.server.key);
    const bool exists = service != table_.end();
    switch (op.kind) {
        case OpKind::kAddService:
            if (exists) return refuse(op, EEXIST);
            if (!is_ipvs_scheduler(op.server.scheduler)) return refuse(op, ENOENT);
            table_.emplace(op.server.key, Service{op.server, {}});
            return {};
        case OpKind::kEditService:
            if (!exists) return refuse(op, ESRCH);
            if (!is_ipvs_scheduler(op.server.scheduler)) return refuse(op, ENOENT);
            service->second.server = op.server;
            return {};
        case OpKind::kDeleteService:
            if (!exists) return refuse(op, ESRCH);
            table_.erase(service);
            return {};
        case OpKind::kAddDestination:
        case OpKind::kEditDestination:
        case OpKind::kDeleteDestination:
            if (!exists) return refuse(op, ESRCH);
            return change_destination(service->second.destinations, op);
    }
    return {};
}

Status FakeKernel::change_destination(std::vector<RealServer>& destinations, const Op& op) {
    const auto destination = find_destination(destinations, op.destination);
    const bool exists = destination != destinations.end();
    if (op.kind == OpKind::kAddDestination) {
        if (exists) return refuse(op, EEXIST);
        RealServer added = op.destination;
        added.active_connections = added.inactive_connections = 0;
        auto by_id = [](const RealServer& a, const RealServer& b) { return a.id() < b.id(); };
        destinations.insert(
            std::upper_bound(destinations.begin(), destinations.end(), added, by_id), added);
        return {};
    }
    if (!exists) return refuse(op, ENOENT);
    if (op.kind == OpKind::kEditDestination) {
        destination->weight = op.destination.weight;
    } else {
        destinations.erase(destination);
    }
    return {};
}

Status FakeKernel::set_timeouts(const Timeouts& timeouts) {
    if (timeouts == Timeouts{}) return {};
    ++requests_;
    if (timeouts.tcp_seconds != 0) timeouts_.tcp_seconds = timeouts.tcp_seconds;
    if (timeouts.tcp_fin_seconds != 0) timeouts_.tcp_fin_seconds = timeouts.tcp_fin_seconds;
    if (timeouts.udp_seconds != 0) timeouts_.udp_seconds = timeouts.udp_seconds;
    return {};
}

bool FakeKernel::set_connections(const ServiceKey& key, const IpAddress& address, uint16_t port,
                                 uint32_t active, uint32_t inactive) {
    const auto service = table_.find(key);
    if (service == table_.end()) return false;
    RealServer probe;
    probe.address = address;
    probe.port = port;
    const auto destination = find_destination(service->second.destinations, probe);
    if (destination == service->second.destinations.end()) return false;
    destination->active_connections = active;
    destination->inactive_connections = inactive;
    return true;
}

void FakeKernel::fail_apply(size_t nth, int errno_value) {
    applies_until_failure_ = nth;
    apply_errno_ = errno_value;
}

}  // namespace sb::rules::ipvs::testing
