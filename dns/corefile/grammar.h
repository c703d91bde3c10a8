// The grammar of CoreDNS's Corefile (the Caddyfile lexer and parser CoreDNS
// builds on), as a pure function from text to server blocks. What the
// directives mean is the plugins' job (config.h). See docs/corefile.md.
//
// Lexing (Caddy's lexer): tokens are separated by white space; a token that
// starts with `"` runs to the next unescaped `"` (only `\"` is an escape, any
// other backslash stays literal; newlines may be inside); `#` starts a comment
// to the end of the line, even inside an unquoted token; `{` and `}` are
// braces only as whole unquoted tokens.
//
// Structure: a server block is its keys (`ZONE[:PORT]`, `dns://ZONE[:PORT]`,
// separated by white space or commas; a trailing comma continues the keys on
// the next line) then `{ directives }`; a Corefile of one server block may
// leave out the braces. A directive is a name and the arguments on its line;
// a `{` on that line opens a block of sub-directives, one per line (the first
// may follow the `{`), closed by a `}` that begins its line. `{$NAME}` (and Windows' `{%NAME%}`)
// in keys and arguments is replaced by the environment's value, "" when unset,
// as Caddy does. `import` and snippets are refused.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace sb::dns {

struct CorefileDirective {
    std::string name;
    std::vector<std::string> args;
    bool has_block = false;  // written with { ... }, even an empty one
    std::vector<CorefileDirective> block;
    int line = 0;
};

struct CorefileZone {
    std::string zone;  // lower-case, fully qualified: "cluster.local.", "."
    uint16_t port = 53;
    int line = 0;
};

struct CorefileServerBlock {
    std::vector<CorefileZone> zones;
    std::vector<CorefileDirective> directives;
    int line = 0;  // of its first key
};

struct Corefile {
    std::vector<CorefileServerBlock> blocks;
};

// The value of an environment variable, nullopt when unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const std::string& name)>;

// Errors are kInvalidArgument, one line: `PATH:LINE: why`. `lookup` may be
// empty: every placeholder then expands to "".
Result<Corefile> parse_corefile(std::string_view text, std::string_view path,
                                const EnvironmentLookup& lookup);

// A server block key or a plugin's zone argument, normalised as CoreDNS does
// (transport prefix `dns://` accepted, other transports refused; a trailing
// `:PORT`; lower-cased and fully qualified; an IP prefix such as 10.0.0.0/8
// becomes its reverse zone, 10.in-addr.arpa.). `port` is nullopt when absent.
struct NormalizedZone {
    std::string zone;
    std::optional<uint16_t> port;
};
// Errors are one line without the path ("...: zone is not a valid domain name").
Result<NormalizedZone> normalize_zone(std::string_view text);

// The transport of `text` ("tls" of "tls://x") when it names one other than
// dns://, which is the only one switchboard speaks; nullopt otherwise.
std::optional<std::string_view> transport_other_than_dns(std::string_view text);

// `text` in double quotes for a one-line message (the Corefile's own style,
// unlike base/quote.h's "?": escapes show the exact bytes): at most 100 bytes, control
// bytes, quotes and backslashes escaped (\n, \", \xHH).
std::string escaped_for_message(std::string_view text);

}  // namespace sb::dns
