// The IPVS backend's own work at scale, without a kernel: its sync over the
// unit tests' fakes of every edge (the IPVS table, the helper nftables
// table, the link, conntrack), so what is timed is render, diff and
// bookkeeping, the part that runs the same on a node and in the qemu guest
// (tests/bench/bench-ipvs times the kernel's part there). For each size
// (services x endpoints): the first sync, a resync that adopts the state,
// one endpoint change; as the peer, the nftables backend over its fake
// channel on the same plans, in the same run. Prints times, ratios and the
// IPVS requests sent; asserts nothing; needs no privilege.
//
// Usage: bench_ipvs_backend [SERVICES...]   (default: 1000 10000; 10 endpoints each)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "rules/ipvs/helper_rules.h"
#include "rules/ipvs/ipvs_backend.h"
#include "rules/nftables/nftables_backend.h"
#include "tests/bench/bench_plans.h"
#include "tests/unit/fake_conntrack.h"
#include "tests/unit/rules/ipvs/fake_kernel.h"
#include "tests/unit/rules/nftables/fake_channel.h"

namespace {

using Clock = std::chrono::steady_clock;
using sb::IpAddress;
namespace rules = sb::rules;

double cpu_ms() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

// The node's addresses and its link, as data.
class BenchHost final : public rules::ipvs::HostNetwork {
  public:
    sb::Result<std::vector<IpAddress>> node_addresses() override {
        return std::vector<IpAddress>{*IpAddress::parse("192.168.1.10")};
    }
    sb::Result<std::vector<IpAddress>> link_addresses() override { return link_; }
    sb::Status ensure_link(const std::vector<IpAddress>& addresses) override {
        link_ = addresses;
        return {};
    }
    sb::Status remove_link() override {
        link_.clear();
        return {};
    }
    sb::Status set_sysctl(const std::string&, const std::string&) override { return {}; }

  private:
    std::vector<IpAddress> link_;
};

// A backend's kernel handle onto the shared fake table.
class KernelHandle final : public rules::ipvs::IpvsKernel {
  public:
    explicit KernelHandle(rules::ipvs::IpvsKernel& kernel) : kernel_(kernel) {}
    sb::Result<rules::ipvs::IpvsState> list() override { return kernel_.list(); }
    sb::Result<std::vector<rules::ipvs::RealServer>> list_destinations(
        const rules::ipvs::ServiceKey& key) override {
        return kernel_.list_destinations(key);
    }
    sb::Status apply(const rules::ipvs::Op& op) override { return kernel_.apply(op); }
    sb::Status set_timeouts(const rules::ipvs::Timeouts& t) override {
        return kernel_.set_timeouts(t);
    }
    size_t requests_sent() const override { return kernel_.requests_sent(); }

  private:
    rules::ipvs::IpvsKernel& kernel_;
};

struct Timing {
    double first = 0;
    double adopt = 0;
    double change = 0;
    size_t change_requests = 0;  // of `requests` around the change
};

// `make`: a fresh backend on the shared fake state; `requests`: IPVS
// requests sent so far (0 for the peer).
template <typename Make, typename Requests>
Timing time_three(const rules::Plan& plan, const rules::Plan& changed, Make&& make,
                  Requests&& requests) {
    Timing t;
    auto& make_and_sync = make;
    auto backend = make_and_sync();
    double c0 = cpu_ms();
    if (!backend->sync(plan, nullptr)) std::exit(1);
    t.first = cpu_ms() - c0;
    auto adopting = make_and_sync();
    c0 = cpu_ms();
    if (!adopting->sync(plan, nullptr)) std::exit(1);
    t.adopt = cpu_ms() - c0;
    const size_t before = requests();
    c0 = cpu_ms();
    if (!adopting->sync(changed, &plan)) std::exit(1);
    t.change = cpu_ms() - c0;
    t.change_requests = requests() - before;
    return t;
}

void bench(int services, int endpoints) {
    std::printf("== %d services x %d endpoints (CPU ms of the backend's own work)\n", services,
                endpoints);
    rules::Plan plan = sb::bench::make_bench_plan(services, endpoints);
    plan.revision = rules::next_plan_revision();
    rules::Plan changed = plan;
    changed.services[changed.services.size() / 2].cluster_endpoints.pop_back();
    changed.revision = rules::next_plan_revision();
    changed.changes = rules::PlanChanges{plan.revision,
                                         {{changed.services[changed.services.size() / 2].ns,
                                           changed.services[changed.services.size() / 2].service}}};

    rules::ipvs::testing::FakeKernel ipvs;
    rules::nftables::testing::FakeKernel helper;
    sb::rules::testing::FakeConntrack conntrack;
    const Timing ipvs_time = time_three(
        plan, changed,
        [&] {
            return rules::ipvs::make_backend(
                {}, rules::ipvs::BackendEdges{
                        [&]() -> sb::Result<std::unique_ptr<rules::ipvs::IpvsKernel>> {
                            return std::unique_ptr<rules::ipvs::IpvsKernel>(
                                std::make_unique<KernelHandle>(ipvs));
                        },
                        helper.opener(rules::ipvs::kHelperTable), std::make_unique<BenchHost>(),
                        conntrack.table(), [] { return Clock::now(); }});
        },
        [&] { return ipvs.requests_sent(); });

    rules::nftables::testing::FakeKernel nft;
    sb::rules::testing::FakeConntrack nft_conntrack;
    const Timing nft_time = time_three(
        plan, changed,
        [&] {
            return rules::nftables::make_backend(
                {}, rules::nftables::BackendEdges{nft.opener(), nft_conntrack.table()});
        },
        [] { return size_t{0}; });

    auto row = [](const char* what, double ipvs_ms, double nft_ms) {
        std::printf("  %-22s ipvs %9.1f   nftables %9.1f   ratio %5.2f\n", what, ipvs_ms, nft_ms,
                    nft_ms > 0 ? ipvs_ms / nft_ms : 0.0);
    };
    row("first sync", ipvs_time.first, nft_time.first);
    row("adopting resync", ipvs_time.adopt, nft_time.adopt);
    row("one endpoint change", ipvs_time.change, nft_time.change);
    std::printf("  IPVS requests of the one endpoint change: %zu\n", ipvs_time.change_requests);
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    std::printf("  peak RSS so far: %ld MB\n", u.ru_maxrss / 1024);
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<int> sizes;
    for (int i = 1; i < argc; ++i) sizes.push_back(std::atoi(argv[i]));
    if (sizes.empty()) sizes = {1000, 10000};
    for (int services : sizes) bench(services, 10);
    return 0;
}
