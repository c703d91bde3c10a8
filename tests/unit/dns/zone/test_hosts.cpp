#include <sys/stat.h>
#include <unistd.h>

#include <catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

#include "dns/corefile/options.h"
#include "dns/zone/hosts.h"
#include "dns/zone/hosts_reloader.h"

using namespace sb;
using namespace sb::dns;

namespace {

IpAddress ip(const char* text) {
    return *IpAddress::parse(text);
}
std::string wire(const std::string& text) {
    return *name_from_text(text);
}
ZoneSet zones(std::vector<std::string> texts) {
    ZoneSet set;
    for (const auto& t : texts) set.zones.push_back(wire(t));
    return set;
}

HostsTable::Verdict ask(const HostsTable& table, const std::string& name, uint16_t qtype,
                        std::vector<Record>& answers) {
    Question q{wire(name), qtype, kClassIN};
    return table.answer(q, name_lower(q.name), answers);
}

// The table of `text` as the file, no inline lines, zone "." unless given.
std::shared_ptr<const HostsTable> table_of(const std::string& text, HostsOptions options = {}) {
    if (options.zones.zones.empty()) options.zones = zones({"."});
    auto mappings = parse_hosts(text, options.zones);
    REQUIRE(mappings.ok());
    return HostsTable::build(options, *mappings);
}

std::string temp_path(const char* tag) {
    return "/tmp/sb-test-hosts-" + std::to_string(::getpid()) + "-" + tag;
}

void write_file(const std::string& path, const std::string& text) {
    // Written beside and renamed over, as a ConfigMap update does: a new inode.
    std::string tmp = path + ".new";
    {
        std::ofstream file(tmp);
        file << text;
    }
    REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0);
}

}  // namespace

TEST_CASE("hosts parse: fields, comments, IPv6 zones; bad lines skipped") {
    auto mappings = parse_hosts(
        "# a comment\n"
        "127.0.0.1\tlocalhost  Localhost.Localdomain # trailing comment\n"
        "\n"
        "fe80::1%eth0 router\n"
        "not-an-ip name\n"
        "10.0.0.1\n"
        "10.0.0.2 bad..name good\r\n",
        zones({"."}));
    REQUIRE(mappings.ok());
    CHECK(*mappings == std::vector<HostsMapping>{{ip("127.0.0.1"), wire("localhost")},
                                                 {ip("127.0.0.1"), wire("localhost.localdomain")},
                                                 {ip("fe80::1"), wire("router")},
                                                 {ip("10.0.0.2"), wire("good")}});
}

TEST_CASE("hosts parse: names outside the plugin's zones are not read") {
    auto mappings =
        parse_hosts("10.0.0.1 a.example.org b.example.com example.org\n", zones({"example.org"}));
    REQUIRE(mappings.ok());
    CHECK(*mappings == std::vector<HostsMapping>{{ip("10.0.0.1"), wire("a.example.org")},
                                                 {ip("10.0.0.1"), wire("example.org")}});
}

TEST_CASE("hosts parse: more than the bound of mappings is refused") {
    std::string text;
    for (size_t i = 0; i <= kMaxHostsMappings / 2; ++i) {
        text += "10.0.0.1 a" + std::to_string(i) + " b" + std::to_string(i) + "\n";
    }
    auto mappings = parse_hosts(text, zones({"."}));
    REQUIRE_FALSE(mappings.ok());
    CHECK(mappings.error().message.find("more than 100000") != std::string::npos);
}

TEST_CASE("hosts table: A and AAAA of a name, owned by the name as asked, with the ttl") {
    HostsOptions options;
    options.ttl = 60;
    auto table = table_of("10.0.0.1 node1\n10.0.0.2 node1\nfd00::1 node1\n", options);
    std::vector<Record> answers;
    CHECK(ask(*table, "NODE1", type::kA, answers) == HostsTable::Verdict::kReply);
    REQUIRE(answers.size() == 2);
    CHECK(answers[0] ==
          Record{wire("NODE1"), type::kA, kClassIN, 60, rdata_address(ip("10.0.0.1"))});
    CHECK(answers[1].rdata == rdata_address(ip("10.0.0.2")));
    answers.clear();
    CHECK(ask(*table, "node1", type::kAAAA, answers) == HostsTable::Verdict::kReply);
    REQUIRE(answers.size() == 1);
    CHECK(answers[0].rdata == rdata_address(ip("fd00::1")));
}

TEST_CASE("hosts table: a name with only the other address type, or asked MX, is NODATA") {
    auto table = table_of("10.0.0.1 v4only\n");
    std::vector<Record> answers;
    CHECK(ask(*table, "v4only", type::kAAAA, answers) == HostsTable::Verdict::kReply);
    CHECK(answers.empty());
    CHECK(ask(*table, "v4only", type::kMX, answers) == HostsTable::Verdict::kReply);
    CHECK(answers.empty());
}

TEST_CASE("hosts table: an unknown name of its zones is SERVFAIL, or next with fallthrough") {
    std::vector<Record> answers;
    HostsOptions strict;
    strict.zones = zones({"example.org"});
    auto table = table_of("10.0.0.1 a.example.org\n", strict);
    CHECK(ask(*table, "b.example.org", type::kA, answers) == HostsTable::Verdict::kServFail);
    CHECK(ask(*table, "b.example.com", type::kA, answers) == HostsTable::Verdict::kNext);

    HostsOptions all = strict;
    all.fallthrough = all.zones;
    CHECK(ask(*table_of("10.0.0.1 a.example.org\n", all), "b.example.org", type::kA, answers) ==
          HostsTable::Verdict::kNext);

    HostsOptions some = strict;
    some.zones = zones({"example.org"});
    some.fallthrough = zones({"sub.example.org"});
    auto partial = table_of("10.0.0.1 a.example.org\n", some);
    CHECK(ask(*partial, "x.sub.example.org", type::kA, answers) == HostsTable::Verdict::kNext);
    CHECK(ask(*partial, "x.example.org", type::kA, answers) == HostsTable::Verdict::kServFail);
    CHECK(answers.empty());
}

TEST_CASE("hosts table: fallthrough_unsupported passes other types on under fallthrough") {
    // CoreDNS's hosts ServeDNS: a TXT (or MX, HTTPS, ...) question for a
    // name in the table is NODATA, or the next plugin's with
    // fallthrough_unsupported within fallthrough's zones; A, AAAA and PTR
    // are answered as before.
    std::vector<Record> answers;
    HostsOptions options;
    options.zones = zones({"example.org"});
    options.fallthrough = zones({"sub.example.org"});
    options.fallthrough_unsupported = true;
    auto table = table_of("10.0.0.1 a.sub.example.org a.example.org\n", options);
    CHECK(ask(*table, "a.sub.example.org", type::kTXT, answers) == HostsTable::Verdict::kNext);
    CHECK(ask(*table, "a.sub.example.org", type::kMX, answers) == HostsTable::Verdict::kNext);
    CHECK(ask(*table, "a.example.org", type::kTXT, answers) == HostsTable::Verdict::kReply);
    CHECK(answers.empty());
    CHECK(ask(*table, "a.sub.example.org", type::kA, answers) == HostsTable::Verdict::kReply);
    CHECK(answers.size() == 1);
    CHECK(ask(*table, "a.sub.example.org", type::kAAAA, answers) == HostsTable::Verdict::kReply);

    options.fallthrough_unsupported = false;
    answers.clear();
    CHECK(ask(*table_of("10.0.0.1 a.sub.example.org\n", options), "a.sub.example.org", type::kTXT,
              answers) == HostsTable::Verdict::kReply);
    CHECK(answers.empty());
}

TEST_CASE("hosts table: PTR of its addresses anywhere; unknown addresses and no_reverse: next") {
    HostsOptions options;
    options.zones = zones({"example.org"});
    auto table = table_of("10.0.0.1 a.example.org b.example.org\n", options);
    std::vector<Record> answers;
    CHECK(ask(*table, "1.0.0.10.in-addr.arpa", type::kPTR, answers) == HostsTable::Verdict::kReply);
    REQUIRE(answers.size() == 2);
    CHECK(answers[0].rdata == wire("a.example.org"));
    CHECK(answers[1].rdata == wire("b.example.org"));
    answers.clear();
    CHECK(ask(*table, "2.0.0.10.in-addr.arpa", type::kPTR, answers) == HostsTable::Verdict::kNext);

    options.reverse = false;
    auto no_reverse = table_of("10.0.0.1 a.example.org\n", options);
    CHECK(ask(*no_reverse, "1.0.0.10.in-addr.arpa", type::kPTR, answers) ==
          HostsTable::Verdict::kNext);
    CHECK(answers.empty());
}

TEST_CASE("hosts table: file mappings first, then inline ones, each pair once") {
    HostsOptions options;
    options.zones = zones({"."});
    options.inline_mappings = {{ip("10.0.0.9"), wire("node")}, {ip("10.0.0.1"), wire("node")}};
    auto table = table_of("10.0.0.1 node\n10.0.0.1 node\n", options);
    CHECK(table->mapping_count() == 2);
    std::vector<Record> answers;
    ask(*table, "node", type::kA, answers);
    REQUIRE(answers.size() == 2);
    CHECK(answers[0].rdata == rdata_address(ip("10.0.0.1")));
    CHECK(answers[1].rdata == rdata_address(ip("10.0.0.9")));
}

TEST_CASE("hosts reload: a changed file is a new table; a bad one keeps the last good table") {
    std::string path = temp_path("reload");
    write_file(path, "10.0.0.1 node1\n");
    HostsOptions options;
    options.file = path;
    options.zones = zones({"."});
    options.inline_mappings = {{ip("10.0.0.100"), wire("inline")}};
    options.reload = std::chrono::milliseconds(0);  // polled by the test
    HostsHolder holder;
    HostsReloader reloader(options, holder);
    reloader.start();
    auto first = holder.get();
    REQUIRE(first);
    std::vector<Record> answers;
    CHECK(ask(*first, "node1", type::kA, answers) == HostsTable::Verdict::kReply);
    CHECK(ask(*first, "inline", type::kA, answers) == HostsTable::Verdict::kReply);

    CHECK_FALSE(reloader.poll());  // unchanged: not read again
    CHECK(holder.get() == first);

    write_file(path, "10.0.0.2 node2\n");
    CHECK(reloader.poll());
    auto second = holder.get();
    answers.clear();
    CHECK(ask(*second, "node1", type::kA, answers) == HostsTable::Verdict::kServFail);
    CHECK(ask(*second, "node2", type::kA, answers) == HostsTable::Verdict::kReply);
    CHECK(ask(*second, "inline", type::kA, answers) == HostsTable::Verdict::kReply);

    std::remove(path.c_str());
    CHECK_FALSE(reloader.poll());
    CHECK(holder.get() == second);

    write_file(path, std::string(kMaxHostsFileBytes + 1, '#'));
    CHECK_FALSE(reloader.poll());
    CHECK(holder.get() == second);

    write_file(path, "10.0.0.3 node3\n");
    CHECK(reloader.poll());
    answers.clear();
    CHECK(ask(*holder.get(), "node3", type::kA, answers) == HostsTable::Verdict::kReply);
    reloader.stop();
    std::remove(path.c_str());
}

TEST_CASE("hosts reload: a file missing at start serves the inline lines") {
    HostsOptions options;
    options.file = temp_path("missing");
    options.zones = zones({"."});
    options.inline_mappings = {{ip("10.0.0.100"), wire("inline")}};
    HostsHolder holder;
    HostsReloader reloader(options, holder);
    reloader.start();
    REQUIRE(holder.get());
    std::vector<Record> answers;
    CHECK(ask(*holder.get(), "inline", type::kA, answers) == HostsTable::Verdict::kReply);
    CHECK(answers.size() == 1);
    reloader.stop();
}

TEST_CASE("corefile apply: k3s's NodeHosts hosts block") {
    DnsOptions options;
    options.listen = {*parse_host_port("127.0.0.1:5300", 53)};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local in-addr.arpa ip6.arpa {\n  pods insecure\n"
        "  fallthrough in-addr.arpa ip6.arpa\n }\n"
        " hosts /etc/coredns/NodeHosts {\n  ttl 60\n  reload 15s\n  fallthrough\n }\n"
        " forward . " SWITCHBOARD_TEST_DATA "/resolv.conf\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(warnings->empty());
    REQUIRE(options.hosts);
    CHECK(options.hosts->file == "/etc/coredns/NodeHosts");
    CHECK(options.hosts->ttl == 60);
    CHECK(options.hosts->reload == std::chrono::seconds(15));
    CHECK(options.hosts->reverse);
    CHECK(options.hosts->zones.zones == std::vector<std::string>{wire(".")});
    REQUIRE(options.hosts->fallthrough);
    CHECK(options.hosts->fallthrough->zones == std::vector<std::string>{wire(".")});
    CHECK(options.shuffle == AnswerShuffle::kNone);
}

TEST_CASE("corefile apply: hosts zones, inline lines filtered by them, no_reverse") {
    DnsOptions options;
    options.listen = {*parse_host_port("127.0.0.1:5300", 53)};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local\n"
        " hosts /nonexistent example.org {\n  10.0.0.1 a.example.org B.Example.Org other.test\n"
        "  no_reverse\n  fallthrough sub.example.org\n }\n loadbalance\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    REQUIRE(options.hosts);
    CHECK(options.hosts->zones.zones == std::vector<std::string>{wire("example.org")});
    CHECK(options.hosts->inline_mappings ==
          std::vector<HostsMapping>{{ip("10.0.0.1"), wire("a.example.org")},
                                    {ip("10.0.0.1"), wire("b.example.org")}});
    CHECK_FALSE(options.hosts->reverse);
    REQUIRE(options.hosts->fallthrough);
    CHECK(options.hosts->fallthrough->zones == std::vector<std::string>{wire("sub.example.org")});
    CHECK(options.shuffle == AnswerShuffle::kAll);
}

TEST_CASE("corefile apply: kubernetes reverse zones, fallthrough, endpoint options") {
    DnsOptions options;
    options.listen = {*parse_host_port("127.0.0.1:5300", 53)};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local 10.in-addr.arpa other.test {\n  fallthrough\n"
        "  endpoint_pod_names\n  noendpoints\n }\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(*warnings == std::vector<std::string>{
                           "Corefile:2: kubernetes zone other.test. is not served: switchboard "
                           "serves one cluster zone (cluster.local.) and reverse zones"});
    CHECK(options.cluster.reverse_zones.zones == std::vector<std::string>{wire("10.in-addr.arpa")});
    CHECK(options.cluster.fallthrough.zones ==
          std::vector<std::string>{wire("10.in-addr.arpa"), wire("cluster.local")});
    CHECK(options.endpoint_pod_names);
    CHECK_FALSE(options.endpoints);
    CHECK_FALSE(options.hosts);
}

TEST_CASE("corefile apply: kubernetes without fallthrough has none, reverse zones included") {
    DnsOptions options;
    options.listen = {*parse_host_port("127.0.0.1:5300", 53)};
    auto warnings = apply_corefile(".:53 {\n kubernetes cluster.local in-addr.arpa ip6.arpa\n}\n",
                                   "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(options.cluster.reverse_zones.zones == all_reverse_zones().zones);
    CHECK(options.cluster.fallthrough.zones.empty());
    CHECK_FALSE(options.endpoint_pod_names);
    CHECK(options.endpoints);
}

TEST_CASE("corefile apply: hosts outside the kubernetes block is warned and ignored") {
    DnsOptions options;
    options.listen = {*parse_host_port("127.0.0.1:5300", 53)};
    auto warnings = apply_corefile(
        ".:53 {\n kubernetes cluster.local\n}\nexample.org {\n hosts\n forward . 10.0.0.1\n}\n",
        "Corefile", nullptr, options);
    REQUIRE(warnings.ok());
    CHECK(*warnings ==
          std::vector<std::string>{
              "Corefile:5: hosts is served only in the kubernetes block; ignored here"});
    CHECK_FALSE(options.hosts);
}
