// The nftables backend at scale, inside a private network namespace
// (unshare(CLONE_NEWNET): the host's ruleset is never touched). For each size
// (services x endpoints): a full sync into an empty kernel, a full resync
// that adopts the existing table, the first sync of a restarted backend
// (which also reads the dispatch maps' elements), one endpoint change (incremental: with the
// change set a partial replan carries, and without one), and as
// the peer `nft -f` loading the same ruleset text (render_text) and the same
// one-endpoint change as nft commands. Prints times, ratios and peak RSS;
// asserts nothing. Needs root. With --udp every service port is UDP, so each
// sync also runs the UDP conntrack reconcile (against the namespace's own,
// empty, conntrack table: what is timed is the reconcile's own work).
// With --affinity, instead: every 10th service port has ClientIP affinity and
// the affinity map holds one client per endpoint of those (a tenth of them
// naming an endpoint that left); timed are the affinity check alone (dump,
// check against the whole model, deletions), a full resync (which runs it)
// and one endpoint change of an affinity service port (which runs it too).
//
// Usage: bench_nftables [--udp | --affinity] [SERVICES...]   (default: 1000 10000; 10 endpoints
// each)
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

#include "rules/nftables/affinity_cleanup.h"
#include "rules/nftables/diff.h"
#include "rules/nftables/netlink.h"
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

    // A sync of the whole plan over the table in place, timed; `what` ends
    // in a colon.
    auto resync = [&](rules::Backend& b, const char* what) {
        const auto start = Clock::now();
        const double cpu = cpu_ms(RUSAGE_SELF);
        auto synced = b.sync(plan, nullptr);
        std::printf("switchboard %-28s%9.1f ms wall %9.1f ms cpu  (%s)\n", what, ms_since(start),
                    cpu_ms(RUSAGE_SELF) - cpu, synced ? "ok" : synced.error().describe().c_str());
    };
    resync(*backend, "full resync (adopt table):");
    // A new backend (a restarted daemon) also dumps the dispatch maps once,
    // for the UDP frontends its rules DNATed (docs/nftables.md#udp-conntrack).
    resync(*rules::nftables::make_backend({}), "first sync after a restart:");

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

// The affinity map's clients: one per endpoint of every affinity service
// port, each pinned to that endpoint, except every 10th, pinned to an
// address no endpoint has (an endpoint that left). As `nft -f` text.
std::string affinity_clients(const rules::Plan& plan, size_t& clients) {
    std::string text = "add element inet switchboard affinity4 {";
    clients = 0;
    for (const rules::ServicePortPlan& p : plan.services) {
        if (!p.session_affinity.client_ip) continue;
        for (const rules::Endpoint& e : p.cluster_endpoints) {
            const IpAddress client = IpAddress::v4(0xac100000u + static_cast<uint32_t>(clients));
            const IpAddress pinned = clients % 10 == 0 ? IpAddress::v4(0x0b000002u) : e.ip;
            text += (clients == 0 ? " " : ", ") + client.to_string() + " . " +
                    p.cluster_ips[0].to_string() + " . tcp . " + std::to_string(p.port) +
                    " timeout 3h : " + pinned.to_string() + " . " + std::to_string(e.port);
            ++clients;
        }
    }
    return text + " }\n";
}

void bench_affinity(int services, int endpoints) {
    std::printf("== %d services x %d endpoints, every 10th with ClientIP affinity\n", services,
                endpoints);
    rules::Plan plan = sb::bench::make_bench_plan(services, endpoints);
    for (size_t i = 0; i < plan.services.size(); i += 10) {
        plan.services[i].session_affinity = {true, 10800};
    }
    plan.revision = rules::next_plan_revision();
    auto backend = rules::nftables::make_backend({});
    (void)backend->cleanup();
    if (auto full = backend->sync(plan, nullptr); !full) {
        std::printf("full sync failed: %s\n", full.error().describe().c_str());
        return;
    }
    size_t clients = 0;
    const std::string file = "/tmp/switchboard-bench-" + std::to_string(getpid()) + ".nft";
    write_file(file, affinity_clients(plan, clients));
    const double filled = run_nft(file);
    std::remove(file.c_str());
    if (filled < 0) {
        std::printf("filling the affinity map failed\n");
        return;
    }
    auto channel = rules::nftables::NetlinkSocket::open();
    if (!channel) {
        std::printf("netlink: %s\n", channel.error().describe().c_str());
        return;
    }
    const rules::nftables::Model model = rules::nftables::render(plan, {}).model;
    for (const char* what : {"deleting the stale tenth", "nothing stale"}) {
        const auto t0 = Clock::now();
        const double c0 = cpu_ms(RUSAGE_SELF);
        rules::nftables::clean_affinity(**channel, model);
        std::printf("affinity check alone, %zu clients, %s: %7.2f ms wall %7.2f ms cpu\n", clients,
                    what, ms_since(t0), cpu_ms(RUSAGE_SELF) - c0);
    }
    auto t0 = Clock::now();
    double c0 = cpu_ms(RUSAGE_SELF);
    auto resync = backend->sync(plan, nullptr);
    std::printf("full resync with the check:           %9.1f ms wall %9.1f ms cpu  (%s)\n",
                ms_since(t0), cpu_ms(RUSAGE_SELF) - c0,
                resync ? "ok" : resync.error().describe().c_str());

    // One endpoint of an affinity service port moves there and back.
    rules::Plan changed = plan;
    rules::ServicePortPlan& victim = changed.services[0];
    victim.cluster_endpoints[3].ip = IpAddress::v4(0x0b000001u);
    std::vector<double> wall;
    double cpu = 0;
    rules::Plan current = plan;
    for (int round = 0; round < 10; ++round) {
        rules::Plan next = round % 2 == 0 ? changed : plan;
        next.revision = rules::next_plan_revision();
        next.changes = rules::PlanChanges{current.revision, {{victim.ns, victim.service}}};
        t0 = Clock::now();
        c0 = cpu_ms(RUSAGE_SELF);
        if (auto r = backend->sync(next, &current); !r) {
            std::printf("incremental sync failed: %s\n", r.error().describe().c_str());
            return;
        }
        cpu += (cpu_ms(RUSAGE_SELF) - c0) / 10;
        wall.push_back(ms_since(t0));
        current = std::move(next);
    }
    std::sort(wall.begin(), wall.end());
    std::printf(
        "one affinity endpoint change (check):  %9.2f ms wall %9.2f ms cpu  (median of 10, min "
        "%.2f)\n",
        wall[wall.size() / 2], cpu, wall.front());
    (void)backend->cleanup();
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
    bool affinity = false;
    for (int i = 1; i < argc; ++i) {
        if (std::string(argv[i]) == "--udp") {
            protocol = rules::Protocol::kUDP;
        } else if (std::string(argv[i]) == "--affinity") {
            affinity = true;
        } else {
            sizes.push_back(std::atoi(argv[i]));
        }
    }
    if (sizes.empty()) sizes = {1000, 10000};
    for (int n : sizes) {
        if (affinity) {
            bench_affinity(n, 10);
        } else {
            bench(n, 10, protocol);
        }
    }
    return 0;
}
