// A parsed Corefile as its typed DNS configuration (server_config.h): each
// server block's directives go through the plugin table in config.cpp to
// their plugin's mapping (plugin_*.cpp), which checks the arguments as
// CoreDNS's setup.go does. docs/corefile.md lists what is honoured and what
// is parsed only.
//
// A plugin CoreDNS has but switchboard does not is a warning (once per
// plugin name, at its first use); a name CoreDNS does not know either, or a
// bad argument, is an error. Every message is one line, `PATH:LINE: why`.
//
// Thread safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "dns/corefile/grammar.h"
#include "dns/corefile/server_config.h"

namespace sb::dns {

Result<CorefileConfig> map_corefile(const Corefile& corefile, std::string_view path);

// Zones as map_corefile normalised them (text, trailing dot) in wire form,
// lower-case, as the DNS layer matches names against them.
std::vector<std::string> wire_zones(const std::vector<std::string>& zones);

}  // namespace sb::dns
