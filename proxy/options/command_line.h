// The one command-line splitter of the binary: the daemon's flags
// (proxy/options/flags.cpp) and the Pod commands' (proxy/commands/) are both
// split here, the way Go's pflag splits kube-proxy's and kubelet's command
// lines, so a flag is written the same way whichever command it belongs to.
//
// Accepted spellings: `--flag=value`, `--flag value`, `--flag` alone for a
// boolean (then "true"), `-x=value`, `-x value`, `-xvalue`. '_' counts as
// '-' in a flag name (pflag's word-separator normalisation, which kube-proxy
// and kubelet install); the caller's lookup sees the name as written and
// normalises it. `--` ends the flags where positional words are allowed.
// What a flag means, its value's checks and which value wins when it is
// given twice are the caller's (pflag, and both callers: the last).
// Pure; never throws.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::proxy {

// How a flag takes its value.
enum class FlagValue {
    kRequired,  // `--flag=value` or `--flag value`
    kBoolean,   // `--flag` ("true") or `--flag=value`; the next word is not its value
    // A boolean that also takes the next word when that word is a boolean
    // spelling (`--enable-service-links false`, as the Pod commands document).
    kBooleanOrWord,
};

// One word of a split command line: a flag with its value, or a positional
// word (`name` empty).
struct CommandWord {
    std::string name;   // as written, up to '=': "--sync-period", "-v"; "" for a positional
    std::string value;  // the flag's value ("true" for a bare boolean), or the word
};

// Looks a flag name up: whether it takes a value, or an error that ends the
// split (an unknown flag, one that is refused). Called in the order the
// flags appear, once each.
using FlagLookup = std::function<Result<FlagValue>(std::string_view name)>;

// What to do with a word that is not a flag: refuse it with this reason
// (for example "only flags follow the command word"), or keep it.
struct PositionalWords {
    bool allowed = false;
    std::string_view refusal;  // when not allowed: "\"WORD\": unexpected argument (REFUSAL)"
};

// Splits `args` (without the program name or the command word). Errors,
// kInvalidArgument, one line: an unexpected positional word, the lookup's
// error, "--flag: needs a value".
Result<std::vector<CommandWord>> split_command_line(const std::vector<std::string>& args,
                                                    const FlagLookup& lookup,
                                                    const PositionalWords& positionals);

// The name a flag is looked up by: '_' read as '-'.
std::string normalised_flag_name(std::string_view name);

// pflag's boolean spellings (strconv.ParseBool): 1 t T TRUE true True and
// 0 f F FALSE false False; nullopt for anything else.
std::optional<bool> parse_bool_text(std::string_view text);

}  // namespace sb::proxy
