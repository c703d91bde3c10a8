// The server-side search path's pure part (dns/search_path/autopath.h): what is a
// first expansion, and which names a Pod's resolver would ask next, in
// kubelet's order and within its limits.
#include <catch.hpp>

#include <string>
#include <vector>

#include "dns/search_path/autopath.h"
#include "dns/wire/wire.h"

using namespace sb;
using namespace sb::dns;

namespace {

std::string wire(const std::string& text) {
    return *name_from_text(text);
}

const std::string kZone = wire("cluster.local");

// The steps as text with their indices, "name@index".
std::vector<std::string> steps_of(const std::string& asked, const std::string& ns,
                                  const std::vector<std::string>& node_searches = {}) {
    std::vector<std::string> wired;
    for (const auto& search : node_searches) wired.push_back(wire(search));
    auto steps = search_steps(wire(asked), ns, kZone, wired);
    REQUIRE(steps);
    std::vector<std::string> text;
    for (const auto& step : *steps) {
        text.push_back(name_to_text(step.name) + "@" + std::to_string(step.index));
    }
    return text;
}

}  // namespace

TEST_CASE("autopath: a short name's walk, the node's search domains, then the name itself") {
    CHECK(steps_of("api.example.com.default.svc.cluster.local", "default",
                   {"corp.example", "ec2.internal"}) ==
          std::vector<std::string>{"api.example.com.svc.cluster.local.@1",
                                   "api.example.com.cluster.local.@2",
                                   "api.example.com.corp.example.@3",
                                   "api.example.com.ec2.internal.@4", "api.example.com.@5"});
    CHECK(steps_of("web.prod.svc.cluster.local", "prod") ==
          std::vector<std::string>{"web.svc.cluster.local.@1", "web.cluster.local.@2", "web.@3"});
}

TEST_CASE("autopath: the names keep the asker's case; the match ignores it") {
    auto steps = search_steps(wire("Web.Prod.SVC.Cluster.Local"), "prod", kZone, {});
    REQUIRE(steps);
    REQUIRE(steps->size() == 3);
    CHECK((*steps)[0].name == wire("Web.svc.cluster.local"));
    CHECK((*steps)[2].name == wire("Web"));
}

TEST_CASE("autopath: only a name strictly under <ns>.svc.<zone> is a first expansion") {
    auto not_first = [](const std::string& asked, const std::string& ns) {
        return !search_steps(wire(asked), ns, kZone, {});
    };
    CHECK(not_first("web.svc.cluster.local", "prod"));               // the second expansion
    CHECK(not_first("web.cluster.local", "prod"));                   // the third
    CHECK(not_first("web.other.svc.cluster.local", "prod"));         // another namespace's
    CHECK(not_first("prod.svc.cluster.local", "prod"));              // the suffix itself
    CHECK(not_first("web.prod.svc.cluster.local.example", "prod"));  // not in the zone
    CHECK(not_first("web.xprod.svc.cluster.local", "prod"));         // a label boundary
    CHECK(not_first("api.example.com", "prod"));
    CHECK(not_first("web.prod.svc.cluster.local", ""));
    CHECK(is_first_expansion(wire("a.b.prod.svc.cluster.local"), "prod", kZone));
    CHECK_FALSE(is_first_expansion(wire("prod.svc.cluster.local"), "prod", kZone));
    CHECK_FALSE(is_first_expansion(wire("a.prod.svc.cluster"), "prod", kZone));
}

TEST_CASE("autopath: kubelet's list: duplicates once, at most 32 domains") {
    // A node domain equal to the zone is not asked twice.
    CHECK(steps_of("web.prod.svc.cluster.local", "prod", {"cluster.local", "corp.example"}) ==
          std::vector<std::string>{"web.svc.cluster.local.@1", "web.cluster.local.@2",
                                   "web.corp.example.@3", "web.@4"});
    std::vector<std::string> many;
    for (int i = 0; i < 40; ++i) many.push_back("d" + std::to_string(i) + ".example");
    auto steps = steps_of("web.prod.svc.cluster.local", "prod", many);
    // 3 cluster domains + 29 node domains = 32, then the bare name.
    REQUIRE(steps.size() == 32);
    CHECK(steps[30] == "web.d28.example.@31");
    CHECK(steps[31] == "web.@32");
}

TEST_CASE("autopath: kubelet's list: at most 2048 characters, cut from its end") {
    // Ten 250-character domains after the cluster's 22, 17 and 13: a line
    // of 2564 characters with its spaces, so the last three go (1811).
    std::vector<std::string> long_domains;
    for (int i = 0; i < 10; ++i) {
        std::string label(62, static_cast<char>('a' + i));
        long_domains.push_back(label + "." + label + "." + label + "." + label.substr(0, 61));
    }
    REQUIRE(long_domains[0].size() == 250);
    auto steps = steps_of("w.prod.svc.cluster.local", "prod", long_domains);
    // w + a 250-character domain is 254 bytes on the wire: each fits.
    size_t node_steps = steps.size() - 3;  // svc.zone, zone, bare
    CHECK(node_steps == 7);
    CHECK(steps.back() == "w.@10");
}

TEST_CASE("autopath: a name too long with a domain is left out, its index kept") {
    std::string long_base;
    for (int i = 0; i < 3; ++i) long_base += std::string(63, 'a' + i) + ".";
    long_base += std::string(30, 'z');  // 222 characters
    std::string asked = long_base + ".p.svc.cluster.local";
    auto steps = steps_of(asked, "p", {"a-rather-long-domain-name-for-this.example"});
    // base + svc.cluster.local fits; base + cluster.local fits; the node
    // domain does not (265 characters).
    REQUIRE(steps.size() == 3);
    CHECK(steps[0] == long_base + ".svc.cluster.local.@1");
    CHECK(steps[1] == long_base + ".cluster.local.@2");
    CHECK(steps[2] == long_base + ".@4");
}
