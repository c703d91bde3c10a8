// The command lines of the small commands (`pod-dns`, `pod-env`, `lookup`):
// each declares its options here, as the daemon declares its own in the
// option table, and both are split by the one splitter of
// proxy/options/command_line.h, so a flag is spelled the same way
// everywhere (`--flag=value`, `--flag value`, `-n shop`, `-nshop`, '_' as
// '-', booleans bare or `=true|false`, the last of a repeated flag wins).
//
// Called from main's thread only; the options write through the references
// their store functions hold, so a CommandLine lives no longer than them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "proxy/options/command_line.h"

namespace sb::proxy {

// One option of a command: a flag ("--namespace", "-n") or, when its one
// name has no leading '-', a positional word ("QNAME"), taken in order.
struct CommandOption {
    std::vector<std::string_view> names;
    std::string help;
    FlagValue value = FlagValue::kRequired;
    std::string_view default_text;  // for the help only ("" when none)
    bool required = false;
    // Checks the value and stores it; an error's message leaves out the
    // option's name (the parser puts it in front).
    std::function<Status(const std::string& text)> store;

    bool positional() const { return names.size() == 1 && !names.front().starts_with('-'); }
    CommandOption&& with_default(std::string_view text) && {
        default_text = text;
        return std::move(*this);
    }
    CommandOption&& as_required() && {
        required = true;
        return std::move(*this);
    }
};

// The options that store into a variable of each type. `int_option`
// refuses what parse_integer refuses ("7 is out of range 1-5").
CommandOption text_option(std::vector<std::string_view> names, std::string help,
                          std::string& target);
CommandOption optional_text_option(std::vector<std::string_view> names, std::string help,
                                   std::optional<std::string>& target);
CommandOption bool_option(std::vector<std::string_view> names, std::string help, bool& target,
                          FlagValue value = FlagValue::kBoolean);
CommandOption int_option(std::vector<std::string_view> names, std::string help, int& target,
                         int minimum, int maximum);

// A command: its word, what it does, its options and the text after the
// options in --help (an example and the exit codes).
struct CommandLine {
    std::string_view command;
    std::string_view description;
    std::vector<CommandOption> options;
    std::string_view footer;
};

// What a parsed command line asks for: to run, or to print the help.
enum class CommandRequest { kRun, kHelp };

// Parses `args` (after the command word) into the options' variables. -h
// or --help anywhere asks for the help. Errors, kInvalidArgument, one line
// naming the flag or word: an unknown flag, a missing value, a value its
// option refuses ("--timeout-ms: 0 is out of range 1-30000"), a missing
// required option ("--namespace is required"), a word too many. Pure apart
// from the stores.
Result<CommandRequest> parse_command_line(const CommandLine& line,
                                          const std::vector<std::string>& args);

// The width of every --help text.
inline constexpr size_t kHelpColumns = 78;

// `words` joined by spaces in lines of at most kHelpColumns columns, each
// line starting with `indent` (a word longer than a line gets one alone).
// No trailing newline. Pure.
std::string wrap_words(const std::vector<std::string>& words, std::string_view indent);

// The --help text: the usage line, the description, the options with their
// help and defaults, the footer.
std::string command_help(const CommandLine& line);

}  // namespace sb::proxy
