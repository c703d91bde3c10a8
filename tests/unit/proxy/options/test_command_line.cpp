// The one command-line splitter (proxy/options/command_line.h): pflag's
// spellings, for the daemon (no positional words) and the small commands.
#include <catch.hpp>

#include "proxy/options/command_line.h"

namespace sb::proxy {
namespace {

// --json and -q are booleans, --links a boolean that takes a boolean word,
// everything else starting with "--" or "-n" takes a value; --bad is refused.
Result<FlagValue> test_lookup(std::string_view name) {
    const std::string normalised = normalised_flag_name(name);
    if (normalised == "--json" || normalised == "-q") return FlagValue::kBoolean;
    if (normalised == "--links") return FlagValue::kBooleanOrWord;
    if (normalised == "--bad") return make_error(ErrorCode::kInvalidArgument, "--bad: refused");
    return FlagValue::kRequired;
}

std::vector<std::pair<std::string, std::string>> split(std::vector<std::string> args,
                                                       bool positionals = true) {
    auto words = split_command_line(args, test_lookup, PositionalWords{positionals, "flags only"});
    REQUIRE(words.ok());
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& word : *words) out.emplace_back(word.name, word.value);
    return out;
}

std::string error_of(std::vector<std::string> args, bool positionals = true) {
    auto words = split_command_line(args, test_lookup, PositionalWords{positionals, "flags only"});
    REQUIRE_FALSE(words.ok());
    CHECK(words.error().code == ErrorCode::kInvalidArgument);
    return words.error().message;
}

using Words = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("flags split as pflag splits them") {
    CHECK(split({"--namespace=shop", "--namespace", "web", "--ns="}) ==
          Words{{"--namespace", "shop"}, {"--namespace", "web"}, {"--ns", ""}});
    CHECK(split({"-n", "shop", "-nweb", "-n=x"}) ==
          Words{{"-n", "shop"}, {"-n", "web"}, {"-n", "x"}});
    CHECK(split({"--json", "--json=false", "-q", "word"}) ==
          Words{{"--json", "true"}, {"--json", "false"}, {"-q", "true"}, {"", "word"}});
    // A value may start with '-' when it is a separate word.
    CHECK(split({"--namespace", "-n"}) == Words{{"--namespace", "-n"}});
}

TEST_CASE("a boolean takes the next word only where it is declared to, and only a boolean") {
    CHECK(split({"--json", "false"}) == Words{{"--json", "true"}, {"", "false"}});
    CHECK(split({"--links", "false"}) == Words{{"--links", "false"}});
    CHECK(split({"--links", "0", "web"}) == Words{{"--links", "0"}, {"", "web"}});
    CHECK(split({"--links", "web"}) == Words{{"--links", "true"}, {"", "web"}});
    CHECK(split({"--links"}) == Words{{"--links", "true"}});
}

TEST_CASE("positional words, stdin's '-' and the end of the flags") {
    CHECK(split({"-", "--json"}) == Words{{"", "-"}, {"--json", "true"}});
    CHECK(split({"--", "--json", "-n"}) == Words{{"", "--json"}, {"", "-n"}});
}

TEST_CASE("what the splitter refuses, in one line naming the word") {
    CHECK(error_of({"--namespace"}) == "--namespace: needs a value");
    CHECK(error_of({"--bad=1"}) == "--bad: refused");
    CHECK(error_of({"word"}, false) == "\"word\": unexpected argument (flags only)");
    CHECK(error_of({"--"}, false) == "\"--\": unexpected argument (flags only)");
    CHECK(error_of({"line\nbreak"}, false).find('\n') == std::string::npos);
}

TEST_CASE("'_' reads as '-' in flag names and pflag's booleans parse") {
    CHECK(normalised_flag_name("--sync_period") == "--sync-period");
    for (auto yes : {"1", "t", "T", "TRUE", "true", "True"}) CHECK(parse_bool_text(yes) == true);
    for (auto no : {"0", "f", "F", "FALSE", "false", "False"}) CHECK(parse_bool_text(no) == false);
    for (auto neither : {"", "yes", "tRUE", "2"}) CHECK_FALSE(parse_bool_text(neither));
}

}  // namespace
}  // namespace sb::proxy
