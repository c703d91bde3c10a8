#include "proxy/options/command_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/quote.h"
#include "base/text.h"
#include "proxy/options/value_checks.h"

namespace sb::proxy {

namespace {

Error usage_error(std::string_view message) {
    return make_error(ErrorCode::kInvalidArgument, one_line(message));
}

// `text` cut at its spaces.
std::vector<std::string> split_words(std::string_view text) {
    std::vector<std::string> words;
    for (size_t start = 0; start < text.size();) {
        const size_t space = std::min(text.find(' ', start), text.size());
        if (space > start) words.emplace_back(text.substr(start, space - start));
        start = space + 1;
    }
    return words;
}

bool is_help(std::string_view name) {
    const std::string normalised = normalised_flag_name(name);
    return normalised == "--help" || normalised == "-h";
}

const CommandOption* find_option(const CommandLine& line, std::string_view name) {
    const std::string normalised = normalised_flag_name(name);
    for (const auto& option : line.options) {
        if (option.positional()) continue;
        for (auto candidate : option.names) {
            if (candidate == normalised) return &option;
        }
    }
    return nullptr;
}

// "--namespace, -n TEXT" or "QNAME".
std::string option_heading(const CommandOption& option) {
    const std::string heading = fmt::format("{}", fmt::join(option.names, ", "));
    if (option.positional()) return heading;
    switch (option.value) {
        case FlagValue::kRequired:
            return heading + " VALUE";
        case FlagValue::kBoolean:
            return heading + "[=true|false]";
        case FlagValue::kBooleanOrWord:
            return heading + " [true|false]";
    }
    return heading;
}

// An option whose value is stored as written, in a std::string or a
// std::optional<std::string>.
template <typename Target>
CommandOption verbatim_option(std::vector<std::string_view> names, std::string help,
                              Target& target) {
    return CommandOption{std::move(names),
                         std::move(help),
                         FlagValue::kRequired,
                         "",
                         false,
                         [&target](const std::string& text) -> Status {
                             target = text;
                             return {};
                         }};
}

}  // namespace

std::string wrap_words(const std::vector<std::string>& words, std::string_view indent) {
    std::string text(indent);
    size_t column = indent.size();
    bool line_empty = true;
    for (const auto& word : words) {
        if (!line_empty && column + 1 + word.size() > kHelpColumns) {
            text += fmt::format("\n{}", indent);
            column = indent.size();
            line_empty = true;
        } else if (!line_empty) {
            text += ' ';
            ++column;
        }
        text += word;
        column += word.size();
        line_empty = false;
    }
    return text;
}

CommandOption text_option(std::vector<std::string_view> names, std::string help,
                          std::string& target) {
    return verbatim_option(std::move(names), std::move(help), target);
}

CommandOption optional_text_option(std::vector<std::string_view> names, std::string help,
                                   std::optional<std::string>& target) {
    return verbatim_option(std::move(names), std::move(help), target);
}

CommandOption bool_option(std::vector<std::string_view> names, std::string help, bool& target,
                          FlagValue value) {
    return CommandOption{std::move(names),
                         std::move(help),
                         value,
                         "",
                         false,
                         [&target](const std::string& text) -> Status {
                             auto set = parse_bool_value(text);
                             if (!set) return set.error();
                             target = *set;
                             return {};
                         }};
}

CommandOption int_option(std::vector<std::string_view> names, std::string help, int& target,
                         int minimum, int maximum) {
    return CommandOption{std::move(names),
                         std::move(help),
                         FlagValue::kRequired,
                         "",
                         false,
                         [&target, minimum, maximum](const std::string& text) -> Status {
                             auto value = parse_integer(text, minimum, maximum);
                             if (!value) return value.error();
                             target = static_cast<int>(*value);
                             return {};
                         }};
}

Result<CommandRequest> parse_command_line(const CommandLine& line,
                                          const std::vector<std::string>& args) {
    auto lookup = [&line](std::string_view name) -> Result<FlagValue> {
        if (is_help(name)) return FlagValue::kBoolean;
        const CommandOption* option = find_option(line, name);
        if (option == nullptr) {
            return usage_error(fmt::format("{}: unknown flag (see --help)", name));
        }
        return option->value;
    };
    auto words = split_command_line(args, lookup, PositionalWords{true, ""});
    if (!words) return words.error();
    for (const auto& word : *words) {
        if (!word.name.empty() && is_help(word.name) && parse_bool_text(word.value) == true) {
            return CommandRequest::kHelp;
        }
    }
    std::vector<const CommandOption*> given;
    auto positional = line.options.begin();
    for (const auto& word : *words) {
        const CommandOption* option = nullptr;
        std::string_view name = word.name;
        if (word.name.empty()) {
            while (positional != line.options.end() && !positional->positional()) ++positional;
            if (positional == line.options.end()) {
                return usage_error(
                    fmt::format("{}: unexpected argument", quote_for_message(word.value)));
            }
            option = &*positional++;
            name = option->names.front();
        } else if (is_help(word.name)) {
            continue;
        } else {
            option = find_option(line, word.name);
        }
        if (auto stored = option->store(word.value); !stored) {
            return usage_error(fmt::format("{}: {}", name, stored.error().message));
        }
        given.push_back(option);
    }
    for (const auto& option : line.options) {
        if (option.required && std::find(given.begin(), given.end(), &option) == given.end()) {
            return usage_error(fmt::format("{} is required", option.names.front()));
        }
    }
    return CommandRequest::kRun;
}

std::string command_help(const CommandLine& line) {
    std::string usage = fmt::format("switchboard {} [OPTIONS]", line.command);
    for (const auto& option : line.options) {
        if (!option.positional()) continue;
        const auto name = option.names.front();
        usage += option.required ? fmt::format(" {}", name) : fmt::format(" [{}]", name);
    }
    std::string text = fmt::format("{}\n\n{}\n\nOPTIONS:\n  -h, --help\n      this help\n", usage,
                                   wrap_words(split_words(line.description), ""));
    for (const auto& option : line.options) {
        text += fmt::format("  {}\n      {}", option_heading(option), option.help);
        if (!option.default_text.empty()) text += fmt::format(" (default {})", option.default_text);
        if (option.required) text += " (required)";
        text += "\n";
    }
    return fmt::format("{}\n{}", text, line.footer);
}

}  // namespace sb::proxy
