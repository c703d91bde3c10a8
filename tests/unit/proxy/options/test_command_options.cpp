// The small commands' declared options (proxy/options/command_options.h):
// values reach their variables, the last of a repeated flag wins, and each
// refusal is one line naming the flag or word.
#include <catch.hpp>

#include "proxy/options/command_options.h"

namespace sb::proxy {
namespace {

struct Values {
    std::string ns;
    std::string qname;
    std::optional<std::string> domain;
    bool json = false;
    bool links = true;
    int timeout_ms = 2000;
};

CommandLine test_line(Values& values) {
    return CommandLine{
        "demo",
        "Does nothing, for the tests.",
        {text_option({"--namespace", "-n"}, "the namespace", values.ns).as_required(),
         text_option({"QNAME"}, "the name", values.qname).as_required(),
         optional_text_option({"--cluster-domain"}, "the domain", values.domain)
             .with_default("cluster.local"),
         bool_option({"--json"}, "as JSON", values.json),
         bool_option({"--links"}, "links", values.links, FlagValue::kBooleanOrWord),
         int_option({"--timeout-ms"}, "how long", values.timeout_ms, 1, 30000)},
        "Example:\n  switchboard demo -n a web\n"};
}

std::string refusal(std::vector<std::string> args) {
    Values values;
    auto request = parse_command_line(test_line(values), args);
    REQUIRE_FALSE(request.ok());
    CHECK(request.error().code == ErrorCode::kInvalidArgument);
    return request.error().message;
}

TEST_CASE("a command line's values reach their variables") {
    Values values;
    auto request = parse_command_line(
        test_line(values), {"web", "-nshop", "--cluster_domain=example.org", "--json", "--links",
                            "false", "--timeout-ms", "50", "--namespace=last"});
    REQUIRE(request.ok());
    CHECK(*request == CommandRequest::kRun);
    CHECK(values.ns == "last");
    CHECK(values.qname == "web");
    CHECK(values.domain == "example.org");
    CHECK(values.json);
    CHECK_FALSE(values.links);
    CHECK(values.timeout_ms == 50);
}

TEST_CASE("an option not given keeps its variable's value") {
    Values values;
    REQUIRE(parse_command_line(test_line(values), {"-n", "a", "web"}).ok());
    CHECK_FALSE(values.domain);
    CHECK(values.links);
    CHECK(values.timeout_ms == 2000);
}

TEST_CASE("help is asked for anywhere, and wins over everything else") {
    Values values;
    // A value its option would refuse does not hide the help.
    for (auto args : std::vector<std::vector<std::string>>{
             {"--help"}, {"-h"}, {"web", "--help=true"}, {"--timeout-ms=0", "--help"}}) {
        auto request = parse_command_line(test_line(values), args);
        REQUIRE(request.ok());
        CHECK(*request == CommandRequest::kHelp);
    }
    auto declined = parse_command_line(test_line(values), {"--help=false", "-n", "a", "web"});
    REQUIRE(declined.ok());
    CHECK(*declined == CommandRequest::kRun);
}

TEST_CASE("what a command line refuses, in one line naming the flag or word") {
    CHECK(refusal({"web"}) == "--namespace is required");
    CHECK(refusal({"-n", "a"}) == "QNAME is required");
    CHECK(refusal({"-n", "a", "web", "more"}) == "\"more\": unexpected argument");
    CHECK(refusal({"-n", "a", "web", "--bogus"}) == "--bogus: unknown flag (see --help)");
    CHECK(refusal({"-n", "a", "web", "--json=maybe"}) ==
          "--json: \"maybe\" is not a boolean (true or false)");
    CHECK(refusal({"-n", "a", "web", "--timeout-ms=0"}) ==
          "--timeout-ms: 0 is out of range 1-30000");
    CHECK(refusal({"-n", "a", "web", "--timeout-ms", "soon"}).starts_with("--timeout-ms: "));
    CHECK(refusal({"-n"}) == "-n: needs a value");
}

TEST_CASE("the help names the command, every option and its default, and the footer") {
    Values values;
    const std::string help = command_help(test_line(values));
    CHECK(help.starts_with("switchboard demo [OPTIONS] QNAME\n"));
    for (auto text : {"--namespace, -n VALUE", "(required)", "--cluster-domain VALUE",
                      "(default cluster.local)", "--json[=true|false]", "--links [true|false]",
                      "-h, --help", "Example:\n  switchboard demo -n a web\n"}) {
        INFO(text);
        CHECK(help.find(text) != std::string::npos);
    }
}

}  // namespace
}  // namespace sb::proxy
