// Internal to dns/corefile/: what every plugin's mapping shares, and the
// mappings config.cpp's plugin table dispatches to, one plugin_*.cpp per
// plugin or small family of plugins (CoreDNS's setup.go grain).
//
// A mapping reads one directive of a server block (arguments and { }
// block), checks it as CoreDNS's setup does and sets its field of the
// block's ServerConfig. Errors and warnings are one line, `PATH:LINE: why`.
//
// Thread safety: a MapContext belongs to one map_corefile call; the free
// functions are pure.
#pragma once

#include <fmt/format.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "dns/corefile/grammar.h"
#include "dns/corefile/server_config.h"

namespace sb::dns {

// kInvalidArgument with `why`.
Error invalid_argument(std::string why);

// An integer argument in [min, max] (every bound a caller passes fits 32 bits).
Result<uint32_t> parse_number(std::string_view text, int64_t min, int64_t max);

// A Go duration (time.ParseDuration, which CoreDNS's plugins use), not
// negative, to the millisecond: "5s", "1m30s", "0.5s", "0".
Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// One map_corefile call: the Corefile's path for messages and the warnings
// so far. Not thread safe; one per call. `path` is not copied: it must
// outlive the context.
class MapContext {
  public:
    explicit MapContext(std::string_view path) : path_(path) {}

    // kInvalidArgument, `PATH:LINE: why`.
    Error at(int line, const std::string& why) const;
    void warn(int line, const std::string& what);
    // A warning only at the first call with `key` in this Corefile.
    void warn_once(const std::string& key, int line, const std::string& what);
    // A plugin's option CoreDNS has and switchboard does not: one warning.
    void unsupported_option(std::string_view plugin, const CorefileDirective& option);
    Status unknown_option(std::string_view plugin, const CorefileDirective& option) const;
    // Between min and max arguments (max SIZE_MAX: no upper bound).
    Status count(const CorefileDirective& directive, size_t min, size_t max) const;
    Status no_block(const CorefileDirective& directive) const;
    // `value`'s error, if any, prefixed with the directive's line and name.
    template <typename T>
    Result<T> check(const CorefileDirective& directive, Result<T> value) const {
        if (!value) {
            return at(directive.line, fmt::format("{}: {}", directive.name, value.error().message));
        }
        return value;
    }
    // Each of `args` normalised as a zone.
    Result<std::vector<std::string>> zones_of(const CorefileDirective& directive,
                                              std::span<const std::string> args) const;
    Result<Fallthrough> fallthrough(const CorefileDirective& option) const;
    // The warnings so far, moved out.
    std::vector<std::string> take_warnings() { return std::move(warnings_); }

  private:
    std::string_view path_;
    std::vector<std::string> warnings_;
    std::set<std::string> warned_;
};

// A plugin's mapping: `directive` checked as CoreDNS's setup checks it, its
// field of `server` set; warnings go to `context`. Each is declared below
// with this type and defined in the plugin_*.cpp file named above it.
using MapPlugin = Status(const CorefileDirective& directive, ServerConfig& server,
                         MapContext& context);

// plugin_kubernetes.cpp
MapPlugin map_kubernetes;
// plugin_forward.cpp
MapPlugin map_forward;
// plugin_cache.cpp
MapPlugin map_cache;
// plugin_hosts.cpp
MapPlugin map_hosts;
// plugin_log_errors.cpp
MapPlugin map_log, map_errors;
// plugin_http_listeners.cpp
MapPlugin map_prometheus, map_health, map_ready;
// plugin_server.cpp
MapPlugin map_bind, map_reload, map_timeouts;
// plugin_misc.cpp: map_unsupported is every CoreDNS plugin without a row in
// the table (a warning at its first use).
MapPlugin map_loadbalance, map_loop, map_autopath, map_unsupported;

}  // namespace sb::dns
