// The nftables backend at scale, inside a private network namespace
// (unshare(CLONE_NEWNET): the host's ruleset is never touched). For each size
// (services x endpoints): a full sync into an empty kernel, a full resync
// that adopts the existing table, one endpoint change (incremental: with the
// change set a partial replan carries, and without one), and as
// the peer `nft -f` loading the same ruleset text (render_text) and the same
// one-endpoint change as nft commands. Prints times, ratios and peak RSS;
// asserts nothing. Needs root. With --udp every service port is UDP, so each
// sync also runs the UDP conntrack reconcile (against the namespace's own,
// empty, conntrack table: what is timed is the reconcile's own work).
//
// Usage: bench_nftables [--udp] [SERVICES...]   (default: 1000 10000; 10 endpoints each)
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rules/nftables/diff.h"
#include "rules/nftables/nftables_backend.h"
#include "rules/nftables/render.h"
#include "tests/bench/bench_plans.h"

namespace {

using Clock = std::chrono::steady_clock;
using sb::IpAddress;
namespace rules = sb::rules;

double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// User + system CPU milliseconds of this process or of its waited-for
// children: steadier than wall time on a busy machine.
double cpu_ms(int who) {
    rusage u{};
    getrusage(who, &u);
    return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
           (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

long peak_rss_kib(int who) {
    rusage u{};
    getrusage(who, &u);
    return u.ru_maxrss;
}

// Runs `nft -f path`; returns wall milliseconds, or -1 on failure.
double run_nft(const std::string& path) {
    const auto t0 = Clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        execlp("nft", "nft", "-f", path.c_str(), static_cast<char*>(nullptr));
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    const double ms = ms_since(t0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? ms : -1;
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
}

int delete_table() {
    return std::system("nft delete table inet switchboard 2>/dev/null");
}

void bench(int services, int endpoints, rules::Protocol protocol) {
    std::printf("== %d services x %d endpoints, %s\n", services, endpoints,
                rules::to_string(protocol));
    rules::Plan plan = sb::bench::make_bench_plan(services, endpoints, protocol);
    plan.revision = rules::next_plan_revision();
    rules::Plan changed = plan;
    rules::ServicePortPlan& victim = changed.services[changed.services.size() / 2];
    victim.cluster_endpoints[3].ip = IpAddress::v4(0x0b000001u);
    const std::vector<std::pair<std::string, std::string>> victim_services{
        {victim.ns, victim.service}};

    auto backend = rules::nftables::make_backend({});
    (void)backend->cleanup();

    auto t0 = Clock::now();
    double c0 = cpu_ms(RUSAGE_SELF);
    auto full = backend->sync(plan, nullptr);
    const double full_ms = ms_since(t0);
    const double full_cpu = cpu_ms(RUSAGE_SELF) - c0;
    if (!full) {
        std::printf("full sync failed: %s\n", full.error().describe().c_str());
        return;
    }
    std::printf(
        "switchboard full sync (empty kernel):   %9.1f ms wall %9.1f ms cpu  (%zu objects)\n",
        full_ms, full_cpu, full->objects_sent);

    t0 = Clock::now();
    c0 = cpu_ms(RUSAGE_SELF);
    auto adopt = backend->sync(plan, nullptr);
    std::printf("switchboard full resync (adopt table):  %9.1f ms wall %9.1f ms cpu  (%s)\n",
                ms_since(t0), cpu_ms(RUSAGE_SELF) - c0,
                adopt ? "ok" : adopt.error().describe().c_str());

    // The endpoint moves there and back, ten times; each plan is derived
    // from the one before (made outside the timed part). With the change
    // set naming the one Service, as the planner's partial replans carry
    // it, changed_ports looks at that Service only; without it (a whole
    // replan) it walks both plans.
    struct Figures {
        double median_ms = -1, cpu_ms = 0, min_ms = 0;
        double conntrack_ms = 0;  // mean of the syncs' conntrack dumps and deletions
    };
    auto one_change = [&](bool with_change_set) {
        std::vector<double> wall;
        Figures f;
        rules::Plan current = plan;
        for (int round = 0; round < 10; ++round) {
            rules::Plan next = round % 2 == 0 ? changed : plan;
            next.revision = rules::next_plan_revision();
            next.changes = with_change_set ? std::optional<rules::PlanChanges>(rules::PlanChanges{
                                                 current.revision, victim_services})
                                           : std::nullopt;
            const auto start = Clock::now();
            const double cpu0 = cpu_ms(RUSAGE_SELF);
            auto r = backend->sync(next, &current);
            f.cpu_ms += (cpu_ms(RUSAGE_SELF) - cpu0) / 10;
            wall.push_back(ms_since(start));
            if (!r) {
                std::printf("incremental sync failed: %s\n", r.error().describe().c_str());
                return Figures{};
            }
            for (const rules::ConntrackReconcile& c : r->conntrack) {
                f.conntrack_ms += c.seconds * 1e3 / 10;
            }
            current = std::move(next);
        }
        std::sort(wall.begin(), wall.end());
        f.median_ms = wall[wall.size() / 2];
        f.min_ms = wall.front();
        return f;
    };
    const Figures incremental = one_change(true);
    const Figures whole_walk = one_change(false);
    if (incremental.median_ms < 0 || whole_walk.median_ms < 0) return;
    std::printf(
        "switchboard one endpoint change:        %9.2f ms wall %9.2f ms cpu  (median of 10, min "
        "%.2f; conntrack dump and deletions %.2f)\n",
        incremental.median_ms, incremental.cpu_ms, incremental.min_ms, incremental.conntrack_ms);
    std::printf(
        "  the same, plans without change set:   %9.2f ms wall %9.2f ms cpu  (median of 10, min "
        "%.2f; conntrack dump and deletions %.2f)\n",
        whole_walk.median_ms, whole_walk.cpu_ms, whole_walk.min_ms, whole_walk.conntrack_ms);
    const long rss = peak_rss_kib(RUSAGE_SELF);

    // The peer: nft -f with the same ruleset, then the same change.
    const auto text = backend->render_text(plan);
    const std::string file = "/tmp/switchboard-bench-" + std::to_string(getpid()) + ".nft";
    write_file(file, *text);
    delete_table();
    c0 = cpu_ms(RUSAGE_CHILDREN);
    const double nft_full = run_nft(file);
    const double nft_full_cpu = cpu_ms(RUSAGE_CHILDREN) - c0;
    auto model = rules::nftables::render(plan, {}).model;
    std::vector<rules::nftables::Fragment> fragments;
    const auto& old_port = plan.services[plan.services.size() / 2];
    fragments.push_back(rules::nftables::render_service(old_port, {}));
    fragments.push_back(rules::nftables::render_service(victim, {}));
    const auto delta = rules::nftables::update_model(model, {{&fragments[0], &fragments[1]}});
    write_file(file, rules::nftables::to_nft_text(delta, model));
    c0 = cpu_ms(RUSAGE_CHILDREN);
    const double nft_change = run_nft(file);
    const double nft_change_cpu = cpu_ms(RUSAGE_CHILDREN) - c0;
    std::remove(file.c_str());
    delete_table();

    std::printf(
        "nft -f full ruleset:                    %9.1f ms wall %9.1f ms cpu  -> nft/switchboard "
        "%.1fx wall, %.1fx cpu\n",
        nft_full, nft_full_cpu, nft_full / full_ms, nft_full_cpu / full_cpu);
    std::printf(
        "nft -f one endpoint change:             %9.2f ms wall %9.2f ms cpu  -> nft/switchboard "
        "%.1fx wall, %.1fx cpu\n",
        nft_change, nft_change_cpu, nft_change / incremental.median_ms,
        nft_change_cpu / incremental.cpu_ms);
    std::printf("peak RSS: switchboard process %ld MiB, nft %ld MiB\n", rss / 1024,
                peak_rss_kib(RUSAGE_CHILDREN) / 1024);
}

}  // namespace

int main(int argc, char** argv) {
    if (geteuid() != 0) {
        std::printf("bench_nftables: needs root (a private network namespace); skipped\n");
        return 0;
    }
    if (unshare(CLONE_NEWNET) != 0) {
        std::perror("unshare(CLONE_NEWNET)");
        return 1;
    }
    std::vector<int> sizes;
    rules::Protocol protocol = rules::Protocol::kTCP;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--udp") {
            protocol = rules::Protocol::kUDP;
        } else {
            sizes.push_back(std::atoi(argv[i]));
        }
    }
    if (sizes.empty()) sizes = {1000, 10000};
    for (int n : sizes) bench(n, 10, protocol);
    return 0;
}
