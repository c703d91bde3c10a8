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

// `errors [stdout|stacktrace] { consolidate DURATION REGEXP [LEVEL]
// panicRecoveryStacktrace }`: the block's failures are logged. stdout is
// where they go anyway. consolidate and the stack traces only shape the
// log, never an answer: checked as CoreDNS checks them, then warned about
// and not acted on (each failure is logged on its own).
Status map_errors(const CorefileDirective& d, ServerConfig& server, MapContext& context) {
    if (auto s = context.count(d, 0, 1); !s) return s;
    if (!d.args.empty() && d.args[0] != "stacktrace" && d.args[0] != "stdout") {
        return context.at(
            d.line, fmt::format("errors: unknown argument {}", escaped_for_message(d.args[0])));
    }
    for (const auto& o : d.block) {
        if (o.name == "consolidate") {
            if (auto s = context.count(o, 2, 3); !s) return s;
            auto period = context.check(o, parse_duration(o.args[0]));
            if (!period) return period.error();
            if (o.args[1].empty()) return context.at(o.line, "consolidate: an empty REGEXP");
            static const std::set<std::string_view> levels = {"warning", "error", "info", "debug"};
            if (o.args.size() == 3 && !levels.contains(o.args[2])) {
                return context.at(
                    o.line, fmt::format("consolidate: {} is not one of warning, error, info, debug",
                                        escaped_for_message(o.args[2])));
            }
            context.warn_once("errors consolidate", o.line,
                              "errors: consolidate is not acted on; each error is logged");
        } else if (o.name == "panicRecoveryStacktrace" || o.name == "stacktrace") {
            if (auto s = context.count(o, 0, 0); !s) return s;
        } else {
            return context.unknown_option("errors", o);
        }
    }
    server.errors = true;
    return {};
}

}  // namespace sb::dns
