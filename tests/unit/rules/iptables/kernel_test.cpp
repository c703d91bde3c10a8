// The iptables backend against the legacy x_tables kernel interface. Every
// test case first moves the process into a fresh network namespace
// (unshare(CLONE_NEWNET)), so the host's tables are never read or changed.
// Needs root; run by tests/integration/test_iptables_kernel.py under its
// `root` fixture.
#include <netinet/in.h>
#include <unistd.h>
#include <catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "rules/iptables/iptables_backend.h"
#include "rules/iptables/iptc.h"
#include "rules/iptables/render.h"
#include "rules/iptables/table_apply.h"
#include "tests/unit/kernel_fixtures.h"
#include "tests/unit/rules/iptables/sample_plan.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using sb::rules::iptables::testing::sample_plan;
using sb::rules::testing::add_udp_flow;
using sb::rules::testing::Command;
using sb::rules::testing::fresh_netns;
using sb::rules::testing::ip;
using sb::rules::testing::options;
using sb::rules::testing::run;

namespace {

// iptables-legacy-save without the comment and counter lines that differ by time.
std::string save(const char* binary) {
    Command c = run(std::string(binary) + " -c");
    INFO(c.out);
    REQUIRE(c.status == 0);
    std::istringstream in(c.out);
    std::string line;
    std::string out;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (line[0] == ':') line = line.substr(0, line.find(' ', 1) + 2);  // drop counters
        if (line[0] == '[') line = line.substr(line.find(']') + 2);
        out += line + "\n";
    }
    return out;
}

size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

}  // namespace

TEST_CASE("kernel: a plan is applied, hooks inserted once at the top, others' rules kept") {
    fresh_netns();
    REQUIRE(run("iptables-legacy -A INPUT -s 192.0.2.1 -j ACCEPT").status == 0);
    REQUIRE(run("iptables-legacy -t nat -N OTHER").status == 0);
    REQUIRE(run("iptables-legacy -t nat -A PREROUTING -j OTHER").status == 0);
    auto backend = iptables::make_backend(options());
    const Plan plan = sample_plan();
    auto first = backend->sync(plan, nullptr);
    INFO((first ? "" : first.error().describe()));
    REQUIRE(first);
    REQUIRE(first->full);
    REQUIRE(backend->sync(plan, &plan));
    const std::string v4 = save("iptables-legacy-save");
    const std::string v6 = save("ip6tables-legacy-save");
    INFO(v4 << v6);
    REQUIRE(count(v4, "-A PREROUTING -j SWITCHBOARD-SERVICES\n") == 1);
    REQUIRE(v4.find("-A PREROUTING -j SWITCHBOARD-SERVICES\n-A PREROUTING -j OTHER\n") !=
            std::string::npos);
    REQUIRE(count(v4, "-A INPUT -j SWITCHBOARD-FILTER-EXTERNAL\n") == 1);
    REQUIRE(v4.find("-A INPUT -s 192.0.2.1/32 -j ACCEPT\n") != std::string::npos);
    REQUIRE(v4.find(":OTHER -\n") != std::string::npos);
    REQUIRE(v4.find("-j DNAT --to-destination 10.244.1.7:8080") != std::string::npos);
    REQUIRE(v4.find("-p sctp -j DNAT --to-destination 10.244.1.8:8080") != std::string::npos);
    REQUIRE(v4.find("--rcheck --seconds 60 --reap") != std::string::npos);
    REQUIRE(v4.find("-j REJECT --reject-with tcp-reset") != std::string::npos);
    REQUIRE(v6.find("-j DNAT --to-destination [fd00:244:1::7]:8080") != std::string::npos);
    REQUIRE(count(v6, "-A POSTROUTING -j SWITCHBOARD-POSTROUTING\n") == 1);
    auto chains =
        iptables::list_own_chains(*iptables::make_libiptc_xtables(), IpFamily::kV4, "nat");
    REQUIRE(chains);
    REQUIRE(chains->size() == iptables::render(plan, options()).model.v4.nat.chains.size());
}

// The options of each --detect-local-mode rendering: source prefixes, -i NAME
// and -i NAME+.
std::vector<std::pair<const char*, BackendOptions>> detect_local_variants() {
    using sb::rules::testing::by_interface;
    return {{"-s", options()},
            {"-i cbr0", by_interface(options(), LocalDetectMode::kBridgeInterface, "cbr0")},
            {"-i veth+", by_interface(options(), LocalDetectMode::kInterfaceNamePrefix, "veth")}};
}

TEST_CASE("kernel: render_text loads with iptables-restore --noflush into the same ruleset") {
    for (const auto& [match, o] : detect_local_variants()) {
        INFO("local traffic by " << match);
        fresh_netns();
        auto backend = iptables::make_backend(o);
        const Plan plan = sample_plan();
        REQUIRE(backend->sync(plan, nullptr));
        const std::string applied4 = save("iptables-legacy-save");
        const std::string applied6 = save("ip6tables-legacy-save");
        CHECK(applied4.find(std::string(match) + " ") != std::string::npos);

        fresh_netns();
        const iptables::RenderResult r = iptables::render(plan, o);
        for (const auto& [binary, model] : {std::pair{"iptables-legacy-restore", &r.model.v4},
                                            std::pair{"ip6tables-legacy-restore", &r.model.v6}}) {
            const std::string path = "/tmp/sb-ipt-restore-" + std::to_string(getpid());
            std::ofstream(path) << iptables::to_restore_text(*model);
            Command c = run(std::string(binary) + " --noflush " + path);
            std::remove(path.c_str());
            INFO(c.out);
            REQUIRE(c.status == 0);
        }
        // Field by field the same entries: libiptc wrote what iptables would.
        REQUIRE(save("iptables-legacy-save") == applied4);
        REQUIRE(save("ip6tables-legacy-save") == applied6);
    }
}

TEST_CASE("kernel: a resync deletes stale chains and repairs drift") {
    fresh_netns();
    auto backend = iptables::make_backend(options());
    const Plan plan = sample_plan();
    REQUIRE(backend->sync(plan, nullptr));
    const std::string full = save("iptables-legacy-save");
    const std::string web_svc = iptables::service_chain_name("SVC", plan.services[3]);
    REQUIRE(full.find(web_svc) != std::string::npos);

    // Drift: someone flushes a chain and deletes a hook.
    REQUIRE(run("iptables-legacy -t nat -F " + web_svc).status == 0);
    REQUIRE(run("iptables-legacy -t nat -D PREROUTING -j SWITCHBOARD-SERVICES").status == 0);
    REQUIRE(backend->sync(plan, nullptr));
    REQUIRE(save("iptables-legacy-save") == full);

    Plan smaller = plan;
    smaller.services.pop_back();  // web goes
    REQUIRE(backend->sync(smaller, &plan));
    const std::string after = save("iptables-legacy-save");
    INFO(after);
    REQUIRE(after.find(web_svc) == std::string::npos);
    REQUIRE(after.find("SWITCHBOARD-SEP-") != std::string::npos);  // the others' stay
    REQUIRE(save("ip6tables-legacy-save").find("SWITCHBOARD-SVC-") == std::string::npos);
}

TEST_CASE("kernel: a partial sync rewrites only the chains that changed") {
    fresh_netns();
    auto backend = iptables::make_backend(options());
    const Plan plan = sample_plan();
    auto full = backend->sync(plan, nullptr);
    REQUIRE(full);
    // A marker rule in an own chain the next plan does not change.
    const std::string web_svc = iptables::service_chain_name("SVC", plan.services[3]);
    REQUIRE(run("iptables-legacy -t nat -A " + web_svc + " -s 192.0.2.99 -j RETURN").status == 0);

    Plan next = plan;
    next.services[2].cluster_endpoints[0].ip = ip("10.244.1.9");  // sctp moves
    auto partial = backend->sync(next, &plan);
    REQUIRE(partial);
    REQUIRE_FALSE(partial->full);
    REQUIRE(partial->objects_sent > 0);
    REQUIRE(partial->objects_sent < full->objects_sent / 4);
    std::string v4 = save("iptables-legacy-save");
    INFO(v4);
    REQUIRE(v4.find("-p sctp -j DNAT --to-destination 10.244.1.9:8080") != std::string::npos);
    REQUIRE(v4.find("10.244.1.8") == std::string::npos);
    REQUIRE(v4.find("-s 192.0.2.99/32") != std::string::npos);  // untouched chain kept

    // Without `previous` every own chain is rewritten: the drift is gone.
    auto repaired = backend->sync(next, nullptr);
    REQUIRE(repaired);
    REQUIRE(repaired->full);
    REQUIRE(save("iptables-legacy-save").find("192.0.2.99") == std::string::npos);
}

TEST_CASE("kernel: cleanup removes hooks and own chains only, is idempotent, creates nothing") {
    fresh_netns();
    auto backend = iptables::make_backend(options());
    // Nothing instantiated yet: cleanup must not create tables either.
    REQUIRE(backend->cleanup());
    REQUIRE(run("cat /proc/net/ip_tables_names").out.empty());
    REQUIRE(run("iptables-legacy -A FORWARD -d 192.0.2.1 -j DROP").status == 0);
    REQUIRE(backend->sync(sample_plan(), nullptr));
    REQUIRE(backend->cleanup());
    const std::string v4 = save("iptables-legacy-save");
    const std::string v6 = save("ip6tables-legacy-save");
    INFO(v4 << v6);
    REQUIRE(v4.find("SWITCHBOARD") == std::string::npos);
    REQUIRE(v6.find("SWITCHBOARD") == std::string::npos);
    REQUIRE(v4.find("-A FORWARD -d 192.0.2.1/32 -j DROP") != std::string::npos);
    REQUIRE(backend->cleanup());
    REQUIRE(save("iptables-legacy-save") == v4);
}

TEST_CASE("kernel: an invalid service port is skipped, the rest applied") {
    fresh_netns();
    Plan plan = sample_plan();
    plan.services[0].cluster_endpoints[0].port = 0;  // dns
    auto backend = iptables::make_backend(options());
    REQUIRE(backend->sync(plan, nullptr));
    const std::string v4 = save("iptables-legacy-save");
    REQUIRE(v4.find("default/dns:p/UDP") == std::string::npos);
    REQUIRE(v4.find("default/web:p/TCP cluster IP") != std::string::npos);
}

TEST_CASE("kernel: every sync, full ones included, deletes the UDP flows of removed endpoints") {
    fresh_netns();
    Plan plan = sample_plan();  // dns: 10.96.0.53:80 -> 10.244.2.9:8080
    auto backend = iptables::make_backend(options());
    REQUIRE(backend->sync(plan, nullptr));
    if (!add_udp_flow("10.96.0.53", 80, "10.244.2.9", 8080, 40000)) return;
    REQUIRE(add_udp_flow("10.96.0.53", 80, "10.244.2.10", 8080, 40001));  // a removed endpoint
    // Recorded while the port had no endpoints: nothing DNATed it.
    REQUIRE(add_udp_flow("10.96.0.53", 80, "10.96.0.53", 80, 40002));
    auto restarted = iptables::make_backend(options());
    auto stats = restarted->sync(plan, nullptr);
    REQUIRE(stats);
    const Command left = run("conntrack -L -p udp");
    INFO(left.out);
    CHECK(left.out.find("src=10.244.2.9") != std::string::npos);
    CHECK(left.out.find("src=10.244.2.10") == std::string::npos);
    CHECK(left.out.find("sport=40002") == std::string::npos);
    REQUIRE(stats->conntrack.size() == 2);
    CHECK(stats->conntrack[0].deleted == 2);
    CHECK_FALSE(stats->conntrack[1].dumped);  // no IPv6 UDP service port
}

namespace {

// A rule libiptc takes and the kernel refuses at commit: DNAT outside the nat
// table, or in a nat chain reached from POSTROUTING (DNAT is valid in
// PREROUTING and OUTPUT only).
iptables::Rule refused_dnat() {
    iptables::Rule r;
    r.proto = IPPROTO_TCP;
    r.target.kind = iptables::TargetKind::kDnat;
    r.target.address = ip("10.244.9.9");
    r.target.port = 8080;
    return r;
}

// sample_plan() without "empty" and "web": both tables of IPv4 change.
Plan smaller_plan() {
    Plan plan = sample_plan();
    plan.services = {plan.services[0], plan.services[2]};
    return plan;
}

}  // namespace

TEST_CASE("kernel: a refused filter table leaves both tables as they were") {
    fresh_netns();
    REQUIRE(iptables::make_backend(options())->sync(sample_plan(), nullptr));
    const std::string before = save("iptables-legacy-save");
    iptables::FamilyModel broken = iptables::render(smaller_plan(), options()).model.v4;
    broken.filter.chains.at(iptables::kFilterServicesChain).rules.push_back(refused_dnat());

    Status s = iptables::apply_family(*iptables::make_libiptc_xtables(), broken, nullptr);

    REQUIRE_FALSE(s);
    INFO(s.error().describe());
    CHECK(s.error().message.find("filter") != std::string::npos);
    CHECK(save("iptables-legacy-save") == before);
}

TEST_CASE("kernel: a refused nat table puts the committed filter table back") {
    fresh_netns();
    REQUIRE(iptables::make_backend(options())->sync(sample_plan(), nullptr));
    const std::string before = save("iptables-legacy-save");
    iptables::FamilyModel broken = iptables::render(smaller_plan(), options()).model.v4;
    broken.nat.chains.at(iptables::kPostroutingChain).rules.push_back(refused_dnat());
    // The same model without the broken rule does change filter: the check
    // below shows a restore, not a filter table left alone.
    REQUIRE(iptables::render(smaller_plan(), options()).model.v4.filter !=
            iptables::render(sample_plan(), options()).model.v4.filter);

    Status s = iptables::apply_family(*iptables::make_libiptc_xtables(), broken, nullptr);

    REQUIRE_FALSE(s);
    INFO(s.error().describe());
    CHECK(s.error().message.find("filter table restored") != std::string::npos);
    CHECK(save("iptables-legacy-save") == before);
    // And the next good apply goes through.
    REQUIRE(iptables::apply_family(*iptables::make_libiptc_xtables(),
                                   iptables::render(smaller_plan(), options()).model.v4, nullptr));
}
