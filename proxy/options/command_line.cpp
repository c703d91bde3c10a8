#include "proxy/options/command_line.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/quote.h"

namespace sb::proxy {

namespace {

Error command_line_error(std::string_view message) {
    return make_error(ErrorCode::kInvalidArgument, one_line(message));
}

// A flag word split at its '=' ("--flag=value", "-xvalue", "-x=value").
struct FlagWord {
    std::string name;
    std::optional<std::string> value;
};

std::optional<FlagWord> flag_word(const std::string& arg) {
    if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
        const size_t equals = arg.find('=');
        FlagWord word{arg.substr(0, equals), std::nullopt};
        if (equals != std::string::npos) word.value = arg.substr(equals + 1);
        return word;
    }
    if (arg.size() > 1 && arg[0] == '-' && arg[1] != '-') {
        FlagWord word{arg.substr(0, 2), std::nullopt};
        const std::string rest = arg.substr(2);
        if (!rest.empty()) word.value = rest.front() == '=' ? rest.substr(1) : rest;
        return word;
    }
    return std::nullopt;
}

}  // namespace

Result<std::vector<CommandWord>> split_command_line(const std::vector<std::string>& args,
                                                    const FlagLookup& lookup,
                                                    const PositionalWords& positionals) {
    std::vector<CommandWord> words;
    bool flags_ended = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (!flags_ended && positionals.allowed && arg == "--") {
            flags_ended = true;
            continue;
        }
        auto flag = flags_ended ? std::nullopt : flag_word(arg);
        if (!flag) {
            if (!positionals.allowed) {
                return command_line_error(fmt::format("\"{}\": unexpected argument ({})",
                                                      arg.substr(0, 200), positionals.refusal));
            }
            words.push_back(CommandWord{"", arg});
            continue;
        }
        auto kind = lookup(flag->name);
        if (!kind) return kind.error();
        if (!flag->value) {
            const bool has_next = i + 1 < args.size();
            switch (*kind) {
                case FlagValue::kBoolean:
                    flag->value = "true";
                    break;
                case FlagValue::kBooleanOrWord:
                    flag->value = has_next && parse_bool_text(args[i + 1]) ? args[++i] : "true";
                    break;
                case FlagValue::kRequired:
                    if (!has_next) {
                        return command_line_error(fmt::format("{}: needs a value", flag->name));
                    }
                    flag->value = args[++i];
                    break;
            }
        }
        words.push_back(CommandWord{std::move(flag->name), std::move(*flag->value)});
    }
    return words;
}

std::string normalised_flag_name(std::string_view name) {
    std::string normalised(name);
    std::replace(normalised.begin(), normalised.end(), '_', '-');
    return normalised;
}

std::optional<bool> parse_bool_text(std::string_view text) {
    for (std::string_view yes : {"1", "t", "T", "TRUE", "true", "True"}) {
        if (text == yes) return true;
    }
    for (std::string_view no : {"0", "f", "F", "FALSE", "false", "False"}) {
        if (text == no) return false;
    }
    return std::nullopt;
}

}  // namespace sb::proxy
