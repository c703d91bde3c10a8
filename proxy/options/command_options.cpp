#include "proxy/options/command_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/quote.h"
#include "base/text.h"

namespace sb::proxy {

namespace {

Error usage_error(std::string_view message) {
    return make_error(ErrorCode::kInvalidArgument, one_line(message));
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
    std::string heading;
    for (auto name : option.names)
        heading += fmt::format("{}{}", heading.empty() ? "" : ", ", name);
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

// `text` in lines of at most 78 columns, broken at spaces.
std::string wrapped(std::string_view text) {
    std::string out;
    size_t column = 0;
    for (std::string_view rest = text; !rest.empty();) {
        const size_t space = rest.find(' ');
        const std::string_view word = rest.substr(0, space);
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
        if (column > 0 && column + 1 + word.size() > 78) {
            out += '\n';
            column = 0;
        } else if (column > 0) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
    }
    return out;
}

}  // namespace

CommandOption text_option(std::vector<std::string_view> names, std::string help,
                          std::string& target) {
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

CommandOption optional_text_option(std::vector<std::string_view> names, std::string help,
                                   std::optional<std::string>& target) {
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

CommandOption bool_option(std::vector<std::string_view> names, std::string help, bool& target,
                          FlagValue value) {
    return CommandOption{std::move(names),
                         std::move(help),
                         value,
                         "",
                         false,
                         [&target](const std::string& text) -> Status {
                             auto set = parse_bool_text(text);
                             if (!set) {
                                 return usage_error(fmt::format("{} is not a boolean (true|false)",
                                                                quote_for_message(text)));
                             }
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
                                   wrapped(line.description));
    for (const auto& option : line.options) {
        text += fmt::format("  {}\n      {}", option_heading(option), option.help);
        if (!option.default_text.empty()) text += fmt::format(" (default {})", option.default_text);
        if (option.required) text += " (required)";
        text += "\n";
    }
    return fmt::format("{}\n{}", text, line.footer);
}

}  // namespace sb::proxy
