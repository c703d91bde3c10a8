// FakeKernel: the kernel's IPVS table as data, with the answers of
// net/netfilter/ipvs/ip_vs_ctl.c, so the backend's sync, diff and drain
// logic is tested without the ip_vs module. Tests set connection counts,
// make a chosen apply() or every listing fail, and read the Ops the
// "kernel" accepted and the requests sent. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "rules/ipvs/kernel.h"

namespace sb::rules::ipvs::testing {

class FakeKernel : public IpvsKernel {
  public:
    // `table`: what the kernel holds before the first request (a user's
    // virtual servers, or switchboard's from an earlier run).
    explicit FakeKernel(IpvsState table = {}) : table_(std::move(table)) {}

    // The whole table, one request per dump as the generic-netlink kernel
    // sends them: the services, then the destinations of each.
    Result<IpvsState> list() override;
    // An unknown virtual server has no destinations: the kernel's dump
    // answers empty, not with an error.
    Result<std::vector<RealServer>> list_destinations(const ServiceKey& key) override;
    // The kernel's refusals, as errors of code kKernel with its errno:
    // EEXIST for an add of an existing service or destination, ESRCH for
    // any other Op on a missing service, ENOENT for an edit or delete of a
    // missing destination and for a scheduler the kernel has no module for
    // (other than kIpvsSchedulers). A refused Op changes nothing. A new
    // destination starts without connections; an edit changes its weight
    // only.
    Status apply(const Op& op) override;
    Status set_timeouts(const Timeouts& timeouts) override;
    size_t requests_sent() const override { return requests_; }

    // The table now; a test may change it behind switchboard's back (no
    // request is counted).
    const IpvsState& table() const { return table_; }
    IpvsState& table() { return table_; }
    // The Ops accepted, in order (refused ones are not).
    const std::vector<Op>& applied() const { return applied_; }
    void clear_applied() { applied_.clear(); }
    size_t refused() const { return refused_; }
    // The kernel's timeouts: the non-zero ones set so far.
    const Timeouts& timeouts() const { return timeouts_; }

    // Sets a destination's connection counts; false when the table has no
    // such destination.
    bool set_connections(const ServiceKey& key, const IpAddress& address, uint16_t port,
                         uint32_t active, uint32_t inactive = 0);
    // The `nth` apply() from now (1: the next) is refused with `errno_value`.
    void fail_apply(size_t nth, int errno_value);
    // Every list() and list_destinations() fails with `errno_value` until
    // called with 0.
    void fail_lists(int errno_value) { list_errno_ = errno_value; }

  private:
    Status refuse(const Op& op, int errno_value);
    Status change(const Op& op);
    Status change_destination(std::vector<RealServer>& destinations, const Op& op);

    IpvsState table_;
    std::vector<Op> applied_;
    Timeouts timeouts_;
    size_t requests_ = 0;
    size_t refused_ = 0;
    size_t applies_until_failure_ = 0;  // 0: none planned
    int apply_errno_ = 0;
    int list_errno_ = 0;
};

}  // namespace sb::rules::ipvs::testing
