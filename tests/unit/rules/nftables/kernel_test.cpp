// The nftables backend against the real kernel. Every test case first moves
// the process into a fresh network namespace (unshare(CLONE_NEWNET)), so the
// host's ruleset is never read or changed. Needs root; run by
// tests/integration/test_nftables_kernel.py under its `root` fixture.
#include <catch.hpp>

#include <algorithm>
#include <regex>
#include <set>
#include <string>

#include "rules/conntrack.h"
#include "rules/nftables/nftables_backend.h"
#include "rules/nftables/render.h"
#include "tests/unit/kernel_fixtures.h"
#include "tests/unit/rules_fixtures.h"

using namespace sb;
using namespace sb::rules;
using sb::rules::testing::add_udp_flow;
using sb::rules::testing::Command;
using sb::rules::testing::fresh_netns;
using sb::rules::testing::run;

namespace {

std::string list_table(const char* flags = "") {
    Command c = run(std::string("nft ") + flags + " list table inet switchboard");
    INFO(c.out);
    REQUIRE(c.status == 0);
    return c.out;
}

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}

Plan sample_plan() {
    Plan plan;
    plan.node = "node-a";
    for (int i = 0; i < 3; ++i) {
        ServicePortPlan p;
        p.ns = "default";
        p.service = "svc-" + std::to_string(i);
        p.port_name = "http";
        p.protocol = i == 2 ? Protocol::kUDP : Protocol::kTCP;
        p.cluster_ips = {IpAddress::v4(0x0a600000u + 10 + static_cast<uint32_t>(i))};
        if (i == 0) p.cluster_ips.push_back(ip("fd00:96::10"));
        p.port = 80;
        if (i == 1) {
            p.node_port = 30080;
            p.external_traffic_policy = TrafficPolicy::kLocal;
            p.load_balancer_ips = {ip("198.51.100.20")};
            p.load_balancer_source_ranges = {*Prefix::parse("203.0.113.0/24")};
            p.session_affinity = {true, 30};
        }
        for (int e = 0; e < 2; ++e) {
            Endpoint ep;
            ep.ip = IpAddress::v4(0x0af40000u + static_cast<uint32_t>(i * 16 + e + 2));
            ep.port = 8080;
            ep.ready = ep.serving = true;
            ep.is_local = e == 0;
            p.cluster_endpoints.push_back(ep);
            if (ep.is_local) p.local_endpoints.push_back(ep);
        }
        if (i == 0) {
            Endpoint v6;
            v6.ip = ip("fd00:244::2");
            v6.port = 8080;
            v6.ready = v6.serving = true;
            p.cluster_endpoints.push_back(v6);
        }
        plan.services.push_back(p);
    }
    return plan;
}

BackendOptions options() {
    BackendOptions o;
    o.cluster_cidrs = {*Prefix::parse("10.244.0.0/16")};
    return o;
}

// `nft list` output as sorted, trimmed lines with set elements one per line:
// the kernel lists elements in hash order, which changes when an element is
// deleted and added again.
std::string normalised(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        line = std::regex_replace(line, std::regex(R"(^\s*(elements = \{\s*)?|[\s,]*\}?\s*$)"), "");
        if (!line.empty()) lines.push_back(line);
    }
    std::sort(lines.begin(), lines.end());
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
}

// The lines only one side has, for failure messages.
std::string line_diff(const std::string& want, const std::string& got) {
    auto lines = [](const std::string& text) {
        std::multiset<std::string> out;
        size_t start = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            out.insert(text.substr(start, end - start));
            start = end + 1;
        }
        return out;
    };
    const auto a = lines(want), b = lines(got);
    std::string out;
    for (const auto& l : a) {
        if (!b.count(l)) out += "- " + l + "\n";
    }
    for (const auto& l : b) {
        if (!a.count(l)) out += "+ " + l + "\n";
    }
    return out;
}

}  // namespace

TEST_CASE("kernel: a plan is applied in one batch and listed back by nft") {
    fresh_netns();
    auto backend = nftables::make_backend(options());
    auto stats = backend->sync(sample_plan(), nullptr);
    INFO((stats ? "" : stats.error().describe()));
    REQUIRE(stats);
    REQUIRE(stats->full);
    REQUIRE(stats->services == 3);
    const std::string text = list_table();
    CHECK(text.find("type nat hook prerouting priority dstnat; policy accept;") !=
          std::string::npos);
    CHECK(text.find("10.96.0.10 . tcp . 80 : goto cip-dnat4-2") != std::string::npos);
    CHECK(text.find("fd00:96::10 . tcp . 80 : goto dnat6-1") != std::string::npos);
    CHECK(text.find("10.96.0.10 . tcp . 80 . 0 : 10.244.0.2 . 8080") != std::string::npos);
    CHECK(text.find("fd00:96::10 . tcp . 80 . 0 : fd00:244::2 . 8080") != std::string::npos);
    CHECK(text.find("dnat ip to ip daddr . meta l4proto . th dport . numgen random mod 2 map "
                    "@backends4") != std::string::npos);
    // The affinity service keeps a literal cascade.
    CHECK(text.find("numgen random mod 2 0 update @affinity4 { ip saddr . ip daddr . meta") !=
          std::string::npos);
    CHECK(text.find("dnat ip to 10.244.0.18:8080") != std::string::npos);
    CHECK(text.find("tcp . 30080 : goto ext4-") != std::string::npos);
    CHECK(text.find("ip saddr 203.0.113.0/24 return") != std::string::npos);
    CHECK(text.find("update @affinity4") != std::string::npos);
    CHECK(text.find("masquerade") != std::string::npos);
    CHECK(text.find("fib daddr type local") != std::string::npos);
    // A second sync with nothing changed sends nothing.
    const Plan plan = sample_plan();
    auto again = backend->sync(plan, &plan);
    REQUIRE(again);
    REQUIRE(again->objects_sent == 0);
}

// The options of each --detect-local-mode rendering, with a rule nft lists
// for it: source prefixes, `iifname "NAME"` and `iifname "NAME*"`.
std::vector<std::pair<const char*, BackendOptions>> detect_local_variants() {
    using sb::rules::testing::by_interface;
    return {{"ip saddr 10.244.0.0/16 return", options()},
            {"iifname \"cbr0\" return",
             by_interface(options(), LocalDetectMode::kBridgeInterface, "cbr0")},
            {"iifname \"veth*\" return",
             by_interface(options(), LocalDetectMode::kInterfaceNamePrefix, "veth")}};
}

TEST_CASE("kernel: render_text loads with nft -f into the same ruleset") {
    for (const auto& [rule, o] : detect_local_variants()) {
        INFO(rule);
        fresh_netns();
        auto backend = nftables::make_backend(o);
        REQUIRE(backend->sync(sample_plan(), nullptr));
        const std::string ours = list_table();
        CHECK(ours.find(rule) != std::string::npos);
        auto text = backend->render_text(sample_plan());
        REQUIRE(text);
        REQUIRE(backend->cleanup());
        char path[] = "/tmp/switchboard-nft-XXXXXX";
        const int fd = mkstemp(path);
        REQUIRE(fd >= 0);
        REQUIRE(write(fd, text->data(), text->size()) == static_cast<ssize_t>(text->size()));
        close(fd);
        Command load = run(std::string("nft -f ") + path);
        unlink(path);
        INFO(load.out);
        REQUIRE(load.status == 0);
        const std::string theirs = normalised(list_table());
        INFO(line_diff(normalised(ours), theirs));
        REQUIRE(theirs == normalised(ours));
    }
}

TEST_CASE("kernel: an endpoint change is sent incrementally") {
    fresh_netns();
    auto backend = nftables::make_backend(options());
    const Plan before = sample_plan();
    auto first = backend->sync(before, nullptr);
    REQUIRE(first);
    Plan after = before;
    after.services[0].cluster_endpoints[1].ip = ip("10.244.9.9");
    auto step = backend->sync(after, &before);
    INFO((step ? "" : step.error().describe()));
    REQUIRE(step);
    REQUIRE_FALSE(step->full);
    REQUIRE(step->objects_sent > 0);
    REQUIRE(step->objects_sent < first->objects_sent / 4);
    const std::string text = list_table();
    CHECK(text.find("10.96.0.10 . tcp . 80 . 1 : 10.244.9.9 . 8080") != std::string::npos);
    CHECK(text.find("10.244.0.3 . 8080") == std::string::npos);
    CHECK(text.find("10.244.9.9 . 10.244.9.9") != std::string::npos);
}

TEST_CASE("kernel: a full resync repairs drift") {
    fresh_netns();
    auto backend = nftables::make_backend(options());
    const Plan plan = sample_plan();
    REQUIRE(backend->sync(plan, nullptr));
    const std::string good = normalised(list_table());
    const std::string chain = "cip-dnat4-2";  // what svc-0 and svc-2 dispatch to

    SECTION("a flushed chain") {
        REQUIRE(run("nft flush chain inet switchboard " + chain).status == 0);
    }
    SECTION("a deleted element and chain") {
        REQUIRE(run("nft delete element inet switchboard services4 '{ 10.96.0.12 . udp . 80 }'")
                    .status == 0);
        REQUIRE(run("nft delete element inet switchboard services4 '{ 10.96.0.10 . tcp . 80 }'")
                    .status == 0);
        REQUIRE(run("nft delete element inet switchboard backends4 '{ 10.96.0.10 . tcp . 80 . 1 }'")
                    .status == 0);
        REQUIRE(run("nft delete chain inet switchboard " + chain).status == 0);
    }
    SECTION("a flushed table") {
        REQUIRE(run("nft flush table inet switchboard").status == 0);
    }
    SECTION("a deleted table") {
        REQUIRE(run("nft delete table inet switchboard").status == 0);
    }
    SECTION("a foreign chain and set in our table") {
        REQUIRE(run("nft add chain inet switchboard intruder").status == 0);
        REQUIRE(run("nft add set inet switchboard services6 '{ type ipv4_addr; }'").status != 0);
        REQUIRE(run("nft add set inet switchboard odd '{ type ipv4_addr; }'").status == 0);
    }
    REQUIRE(normalised(run("nft list table inet switchboard").out) != good);
    auto repaired = backend->sync(plan, nullptr);
    INFO((repaired ? "" : repaired.error().describe()));
    REQUIRE(repaired);
    const std::string now = normalised(list_table());
    INFO(line_diff(good, now));
    REQUIRE(now == good);
}

TEST_CASE("kernel: a restarted backend adopts the table without recreating it") {
    fresh_netns();
    const Plan plan = sample_plan();
    REQUIRE(nftables::make_backend(options())->sync(plan, nullptr));
    const std::string before = list_table("-a");
    auto restarted = nftables::make_backend(options());
    auto stats = restarted->sync(plan, nullptr);
    REQUIRE(stats);
    const std::string after = list_table("-a");
    // Table, chains and sets keep their handles (nothing was deleted and
    // recreated); only rules were replaced, inside the same transaction.
    std::regex object_handle(R"((table|chain|set|map) [^\n{]*\{ # handle \d+)");
    auto handles = [&](const std::string& text) {
        std::string out;
        for (std::sregex_iterator it(text.begin(), text.end(), object_handle), end; it != end;
             ++it) {
            out += it->str() + "\n";
        }
        return out;
    };
    REQUIRE_FALSE(handles(before).empty());
    REQUIRE(handles(before) == handles(after));
    REQUIRE(stats->objects_sent > 0);
}

TEST_CASE("kernel: cleanup removes the table and is idempotent; foreign tables stay") {
    fresh_netns();
    REQUIRE(run("nft add table inet other").status == 0);
    auto backend = nftables::make_backend(options());
    REQUIRE(backend->sync(sample_plan(), nullptr));
    REQUIRE(backend->cleanup());
    REQUIRE(run("nft list table inet switchboard").status != 0);
    REQUIRE(backend->cleanup());
    REQUIRE(run("nft list table inet other").status == 0);
    // Usable again after cleanup.
    REQUIRE(backend->sync(sample_plan(), nullptr));
    REQUIRE(run("nft list table inet switchboard").status == 0);
}

TEST_CASE("kernel: an invalid service port is skipped, the rest applied") {
    fresh_netns();
    Plan plan = sample_plan();
    plan.services[1].port = 0;
    auto backend = nftables::make_backend(options());
    REQUIRE(backend->sync(plan, nullptr));
    const std::string text = list_table();
    CHECK(text.find("10.96.0.10 . tcp . 80") != std::string::npos);
    CHECK(text.find("10.96.0.11") == std::string::npos);
}

// Two UDP flows to svc-2 (10.96.0.12:80): one DNATed to 10.244.0.34, one to
// 10.244.0.35. False when the conntrack tool is missing.
bool add_udp_flows() {
    return add_udp_flow("10.96.0.12", 80, "10.244.0.34", 8080, 40000) &&
           add_udp_flow("10.96.0.12", 80, "10.244.0.35", 8080, 40001);
}

// sample_plan() without svc-2's endpoint 10.244.0.34.
Plan without_first_udp_endpoint() {
    Plan after = sample_plan();
    after.services[2].cluster_endpoints.erase(after.services[2].cluster_endpoints.begin());
    after.services[2].local_endpoints.clear();
    return after;
}

void check_only_removed_flow_deleted() {
    const Command left = run("conntrack -L -p udp");
    INFO(left.out);
    CHECK(left.out.find("src=10.244.0.34") == std::string::npos);
    CHECK(left.out.find("src=10.244.0.35") != std::string::npos);
}

TEST_CASE("kernel: UDP conntrack entries of a removed endpoint are deleted, others kept") {
    fresh_netns();
    if (!add_udp_flows()) return;
    const Plan before = sample_plan();
    const Plan after = without_first_udp_endpoint();
    auto backend = nftables::make_backend(options());
    REQUIRE(backend->sync(before, nullptr));
    REQUIRE(backend->sync(after, &before));
    check_only_removed_flow_deleted();
}

TEST_CASE("kernel: a full sync (no previous plan) deletes the flows of a removed endpoint") {
    // The first sync after a restart: the endpoint went while no daemon ran.
    fresh_netns();
    auto before = nftables::make_backend(options());
    REQUIRE(before->sync(sample_plan(), nullptr));
    if (!add_udp_flows()) return;
    auto restarted = nftables::make_backend(options());
    auto stats = restarted->sync(without_first_udp_endpoint(), nullptr);
    REQUIRE(stats);
    check_only_removed_flow_deleted();
    REQUIRE(stats->conntrack.size() == 2);
    CHECK(stats->conntrack[0].family == IpFamily::kV4);
    CHECK(stats->conntrack[0].dumped);
    CHECK(stats->conntrack[0].ok);
    CHECK(stats->conntrack[0].deleted == 1);
}

TEST_CASE("kernel: affinity entries of a removed endpoint are deleted, others kept") {
    fresh_netns();
    const Plan before = sample_plan();
    auto backend = nftables::make_backend(options());
    REQUIRE(backend->sync(before, nullptr));
    // svc-1 (10.96.0.11, ClientIP affinity) has endpoints 10.244.0.18 and .19.
    for (const char* entry :
         {"10.244.5.5 . 10.96.0.11 . tcp . 80 timeout 60s : 10.244.0.18 . 8080",
          "10.244.5.6 . 10.96.0.11 . tcp . 80 timeout 60s : 10.244.0.19 . 8080"}) {
        Command c =
            run(std::string("nft add element inet switchboard affinity4 '{ ") + entry + " }'");
        INFO(c.out);
        REQUIRE(c.status == 0);
    }
    Plan after = before;
    after.services[1].cluster_endpoints.erase(after.services[1].cluster_endpoints.begin());
    after.services[1].local_endpoints.clear();
    REQUIRE(backend->sync(after, &before));
    const Command left = run("nft list map inet switchboard affinity4");
    INFO(left.out);
    CHECK(left.out.find("10.244.5.5") == std::string::npos);
    CHECK(left.out.find("10.244.5.6 . 10.96.0.11") != std::string::npos);
}
