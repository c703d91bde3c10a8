// CoreDNS's plugin/{log,errors}/setup.go: the query log's rules and the
// error log switch of a server block.
#include "dns/corefile/plugins.h"

#include <fmt/format.h>

#include <set>
#include <string_view>

namespace sb::dns {

// CoreDNS's log setup: no argument logs every name; one is a name; more
// are names, the last one the format when it has a `{`.
Status map_log(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    std::vector<std::string> names = d.args;
    std::string format(kCommonLogFormat);
    if (names.size() > 1 && names.back().find('{') != std::string::npos) {
        format = names.back();
        names.pop_back();
    }
    if (names.empty()) names.emplace_back(".");
    uint8_t classes = 0;
    std::chrono::milliseconds min_duration{0};
    for (const auto& o : d.block) {
        if (o.name == "minDuration") {
            if (auto s = context.count(o, 0, 1); !s) return s;
            min_duration = std::chrono::milliseconds(100);  // CoreDNS's default
            if (!o.args.empty()) {
                auto parsed = context.check(o, parse_duration(o.args[0]));
                if (!parsed) return parsed.error();
                min_duration = *parsed;
            }
            continue;
        }
        if (o.name != "class") return context.unknown_option("log", o);
        if (auto s = context.count(o, 1, SIZE_MAX); !s) return s;
        for (const auto& arg : o.args) {
            if (arg == "all") {
                classes |= kClassAll;
            } else if (arg == "success") {
                classes |= kClassSuccess;
            } else if (arg == "denial") {
                classes |= kClassDenial;
            } else if (arg == "error") {
                classes |= kClassError;
            } else {
                return context.at(o.line,
                                  fmt::format("class: {} is not one of all, success, denial, error",
                                              escaped_for_message(arg)));
            }
        }
    }
    if (classes == 0) classes = kClassAll;
    auto zones = context.zones_of(d, names);
    if (!zones) return zones.error();
    for (auto& zone : *zones) {
        server.log.push_back(LogConfig{std::move(zone), format, classes, min_duration, d.line});
    }
    return {};
}

namespace {

// consolidate DURATION REGEXP [LEVEL] [show_first], as CoreDNS's
// parseConsolidate checks it. The REGEXP is Go's RE2, which switchboard
// does not compile (docs/corefile.md, Differences from CoreDNS): only its
// length is checked; an empty one is valid, as in Go.
Status check_consolidate(const CorefileDirective& o, const MapContext& context) {
    if (auto s = context.count(o, 2, 4); !s) return s;
    if (auto period = context.check(o, parse_duration(o.args[0])); !period) return period.error();
    constexpr size_t kMaxRegexpLen = 10000;  // CoreDNS's maxRegexpLen
    if (o.args[1].size() > kMaxRegexpLen) {
        return context.at(o.line, fmt::format("consolidate: regex pattern too long: {} > {}",
                                              o.args[1].size(), kMaxRegexpLen));
    }
    static const std::set<std::string_view> levels = {"warning", "error", "info", "debug"};
    bool level = false;
    bool show_first = false;
    for (size_t i = 2; i < o.args.size(); ++i) {
        const std::string& arg = o.args[i];
        if (levels.contains(arg)) {
            if (level) return context.at(o.line, "consolidate: multiple log levels");
            if (show_first) {
                return context.at(o.line, "consolidate: the log level comes before show_first");
            }
            level = true;
        } else if (arg == "show_first") {
            show_first = true;
        } else {
            return context.at(o.line, fmt::format("consolidate: {} is not one of warning, error, "
                                                  "info, debug, show_first",
                                                  escaped_for_message(arg)));
        }
    }
    return {};
}

}  // namespace

// `errors [stdout] { stacktrace; consolidate DURATION REGEXP [LEVEL]
// [show_first] }`: the block's failures are logged, always to stdout.
// consolidate and stacktrace only shape the log, never an answer: checked
// as CoreDNS checks them; consolidate is warned about and not acted on
// (each failure is logged on its own), stacktrace has nothing to trace.
Status map_errors(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 1); !s) return s;
    if (!d.args.empty() && d.args[0] != "stdout") {
        return context.at(d.line, fmt::format("errors: invalid log file {} (only stdout)",
                                              escaped_for_message(d.args[0])));
    }
    for (const auto& o : d.block) {
        if (o.name == "consolidate") {
            if (auto s = check_consolidate(o, context); !s) return s;
            context.warn_once("errors consolidate", o.line,
                              "errors: consolidate is not acted on; each error is logged");
        } else if (o.name == "stacktrace") {
            if (auto s = context.count(o, 0, 0); !s) return s;
        } else {
            return context.unknown_option("errors", o);
        }
    }
    server.errors = true;
    return {};
}

}  // namespace sb::dns
