// The Corefile grammar: Caddy's lexer and server-block parser as CoreDNS
// uses them.
#include <catch.hpp>

#include <map>

#include "dns/corefile/grammar.h"

using namespace sb;
using namespace sb::dns;

namespace {

Corefile parse_ok(std::string_view text, const EnvironmentLookup& lookup = nullptr) {
    auto parsed = parse_corefile(text, "Corefile", lookup);
    INFO((parsed ? std::string() : parsed.error().message));
    REQUIRE(parsed.ok());
    return *parsed;
}

std::string parse_error(std::string_view text) {
    auto parsed = parse_corefile(text, "/etc/coredns/Corefile", nullptr);
    REQUIRE_FALSE(parsed.ok());
    return parsed.error().message;
}

}  // namespace

TEST_CASE("corefile: a server block's zones are normalised, port 53 by default") {
    auto corefile = parse_ok("Example.ORG dns://.:5300 cluster.local.:53 {\n  errors\n}\n");
    REQUIRE(corefile.blocks.size() == 1);
    const auto& zones = corefile.blocks[0].zones;
    REQUIRE(zones.size() == 3);
    CHECK(zones[0].zone == "example.org.");
    CHECK(zones[0].port == 53);
    CHECK(zones[1].zone == ".");
    CHECK(zones[1].port == 5300);
    CHECK(zones[2].zone == "cluster.local.");
    CHECK(zones[2].port == 53);
    CHECK(corefile.blocks[0].line == 1);
}

TEST_CASE("corefile: keys separated by commas, a trailing comma continues on the next line") {
    auto corefile = parse_ok("a.org,b.org, c.org,\n  d.org {\n  log\n}\n");
    REQUIRE(corefile.blocks.size() == 1);
    std::vector<std::string> zones;
    for (const auto& zone : corefile.blocks[0].zones) zones.push_back(zone.zone);
    CHECK(zones == std::vector<std::string>{"a.org.", "b.org.", "c.org.", "d.org."});
    CHECK(corefile.blocks[0].zones[3].line == 2);
    CHECK(parse_error("a.org, {\n}\n") ==
          "/etc/coredns/Corefile:1: expected another zone after ','");
}

TEST_CASE("corefile: an IP prefix key is its reverse zone, rounded to whole labels") {
    auto corefile = parse_ok("10.0.0.0/8 172.16.0.0/12 fd00::/64 192.168.1.0/24:53 {\n}\n");
    const auto& zones = corefile.blocks[0].zones;
    REQUIRE(zones.size() == 4);
    CHECK(zones[0].zone == "10.in-addr.arpa.");
    CHECK(zones[1].zone == "172.in-addr.arpa.");
    CHECK(zones[2].zone == "0.0.0.0.0.0.0.0.0.0.0.0.0.0.d.f.ip6.arpa.");
    CHECK(zones[3].zone == "1.168.192.in-addr.arpa.");
}

TEST_CASE("corefile: directives with arguments, sub-blocks and line numbers") {
    auto corefile = parse_ok(
        "# kubeadm\n"
        ".:53 {\n"
        "    errors   # trailing comment\n"
        "    health {\n"
        "       lameduck 5s\n"
        "    }\n"
        "    forward . 1.1.1.1 \"8.8.8.8\" {\n"
        "        max_concurrent 1000\n"
        "    }\n"
        "}\n"
        "consul.local:53 {\n"
        "  forward . 10.0.0.5\n"
        "}\n");
    REQUIRE(corefile.blocks.size() == 2);
    const auto& first = corefile.blocks[0];
    CHECK(first.line == 2);
    REQUIRE(first.directives.size() == 3);
    CHECK(first.directives[0].name == "errors");
    CHECK(first.directives[0].args.empty());
    CHECK(first.directives[0].line == 3);
    CHECK_FALSE(first.directives[0].has_block);
    const auto& health = first.directives[1];
    CHECK(health.has_block);
    REQUIRE(health.block.size() == 1);
    CHECK(health.block[0].name == "lameduck");
    CHECK(health.block[0].args == std::vector<std::string>{"5s"});
    CHECK(health.block[0].line == 5);
    const auto& forward = first.directives[2];
    CHECK(forward.args == std::vector<std::string>{".", "1.1.1.1", "8.8.8.8"});
    CHECK(forward.line == 7);
    CHECK(forward.block[0].line == 8);
    CHECK(corefile.blocks[1].zones[0].zone == "consul.local.");
    CHECK(corefile.blocks[1].line == 11);
    CHECK(corefile.blocks[1].directives[0].line == 12);
}

TEST_CASE("corefile: comments, quoted strings and escapes as Caddy lexes them") {
    auto corefile = parse_ok(
        ".:53 {\n"
        "  log \"a b\" \"say \\\"hi\\\"\" \"back\\slash\" foo#comment\n"
        "  template \"two\n"
        "lines\" x\n"
        "  errors\n"
        "}\n");
    const auto& directives = corefile.blocks[0].directives;
    REQUIRE(directives.size() == 3);
    CHECK(directives[0].args ==
          std::vector<std::string>{"a b", "say \"hi\"", "back\\slash", "foo"});
    CHECK(directives[1].args == std::vector<std::string>{"two\nlines", "x"});
    // The quoted newline counts: errors is on line 5.
    CHECK(directives[2].line == 5);
    CHECK(parse_error(".:53 {\n  log \"open\n}\n") ==
          "/etc/coredns/Corefile:2: unterminated quoted string");
}

TEST_CASE("corefile: what follows { on its line is the first sub-directive, as CoreDNS reads it") {
    auto corefile = parse_ok(".:53 { kubernetes cluster.local { pods insecure\n  ttl 30\n}\n}\n");
    const auto& kubernetes = corefile.blocks[0].directives.at(0);
    CHECK(kubernetes.name == "kubernetes");
    REQUIRE(kubernetes.block.size() == 2);
    CHECK(kubernetes.block[0].name == "pods");
    CHECK(kubernetes.block[0].args == std::vector<std::string>{"insecure"});
    CHECK(kubernetes.block[1].line == 2);
    // A { alone on the next line opens nothing: CoreDNS's plugins do not see it as a block.
    CHECK(parse_error(".:53 {\n  health\n  {\n  lameduck 5s\n  }\n}\n") ==
          "/etc/coredns/Corefile:3: unexpected '{'");
}

TEST_CASE("corefile: a quoted brace is an argument, not a block") {
    auto corefile = parse_ok(".:53 {\n  log \"{\" \"}\"\n}\n");
    CHECK(corefile.blocks[0].directives[0].args == std::vector<std::string>{"{", "}"});
    CHECK_FALSE(corefile.blocks[0].directives[0].has_block);
}

TEST_CASE("corefile: a single server block may leave out its braces") {
    auto corefile = parse_ok("example.org\nlog\nerrors\n");
    REQUIRE(corefile.blocks.size() == 1);
    CHECK(corefile.blocks[0].directives.size() == 2);
}

TEST_CASE("corefile: {$NAME} and {%NAME%} come from the lookup, unset is empty") {
    std::map<std::string, std::string> environment = {
        {"DOMAIN", "Cluster.Local"}, {"UPSTREAM", "10.0.0.1"}, {"SELF", "{$SELF}"}};
    EnvironmentLookup lookup = [&](const std::string& name) -> std::optional<std::string> {
        auto it = environment.find(name);
        if (it == environment.end()) return std::nullopt;
        return it->second;
    };
    auto corefile = parse_ok(
        "{$DOMAIN}:53 {\n"
        "  forward . {%UPSTREAM%}:5353 x{$UNSET}y {$SELF} {$}\n"
        "}\n",
        lookup);
    CHECK(corefile.blocks[0].zones[0].zone == "cluster.local.");
    CHECK(corefile.blocks[0].directives[0].args ==
          std::vector<std::string>{".", "10.0.0.1:5353", "xy", "{$SELF}", "{$}"});
}

TEST_CASE("corefile: import and snippets are refused with the line") {
    CHECK(parse_error(".:53 {\n  errors\n  import /etc/coredns/custom/*.override\n}\n") ==
          "/etc/coredns/Corefile:3: import is not supported: paste the imported file's content "
          "into the Corefile");
    CHECK(parse_error(".:53 {\n}\nimport /etc/coredns/custom/*.server\n") ==
          "/etc/coredns/Corefile:3: import is not supported: paste the imported file's content "
          "into the Corefile");
    CHECK(parse_error("(common) {\n  errors\n}\n")
              .starts_with("/etc/coredns/Corefile:1: snippet \"(common)\" is not supported"));
}

TEST_CASE("corefile: syntax errors name the line") {
    CHECK(parse_error(".:53 {\n  errors\n") ==
          "/etc/coredns/Corefile:1: unexpected end of file: this '{' is never closed");
    // The last } closes health's block: the server block's { stays open.
    CHECK(parse_error(".:53 {\n  health {\n    lameduck 5s\n}\n") ==
          "/etc/coredns/Corefile:1: unexpected end of file: this '{' is never closed");
    CHECK(parse_error(".:53 {\n  health {\n    lameduck 5s\n") ==
          "/etc/coredns/Corefile:2: unexpected end of file: this '{' is never closed");
    CHECK(parse_error(".:53 {\n  errors }\n") ==
          "/etc/coredns/Corefile:2: unexpected '}': a closing brace must begin its line");
    CHECK(parse_error("}\n") == "/etc/coredns/Corefile:1: unexpected '}'");
    CHECK(parse_error(".:53 {\n  {\n}\n") == "/etc/coredns/Corefile:2: unexpected '{'");
    CHECK(parse_error("tls://.:853 {\n}\n") ==
          "/etc/coredns/Corefile:1: \"tls://.:853\": transport \"tls\" is not supported; "
          "switchboard serves plain DNS (dns://)");
    CHECK(parse_error(".:99999 {\n}\n") ==
          "/etc/coredns/Corefile:1: \".:99999\": port 99999 is out of range 1-65535");
    CHECK(parse_error("\n\nexample..org {\n}\n") ==
          "/etc/coredns/Corefile:3: \"example..org\": zone is not a valid domain name");
    CHECK(parse_error(".: {\n}\n") ==
          "/etc/coredns/Corefile:1: \".:\": expecting a port after the last colon");
}

TEST_CASE("corefile: an error quoting the input stays on one line") {
    CHECK(parse_error("\"a\n..b\"\t{\n}\n") ==
          "/etc/coredns/Corefile:1: \"a\\n..b\": zone is not a valid domain name");
    CHECK(escaped_for_message(std::string("x\"\\\x01", 4)) == "\"x\\\"\\\\\\x01\"");
}

TEST_CASE("corefile: nesting is bounded") {
    std::string text = ".:53 {\n";
    for (int i = 0; i < 40; ++i) text += "a {\n";
    CHECK(parse_error(text).ends_with(": blocks are nested too deeply"));
}

TEST_CASE("corefile: an empty file has no server blocks; a BOM is skipped") {
    CHECK(parse_ok("").blocks.empty());
    CHECK(parse_ok("# only a comment\n").blocks.empty());
    CHECK(parse_ok("\xEF\xBB\xBF.:53 {\n}\n").blocks[0].zones[0].zone == ".");
}
