// How a Corefile sets DnsOptions at start (--dns-corefile): what is honoured
// today; the rest of the typed configuration is parsed and validated only
// (docs/corefile.md).
//
// Thread safety: apply_corefile() reads the resolv.conf files a `forward .`
// names besides addresses; otherwise pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "dns/corefile/config.h"
#include "dns/corefile/grammar.h"
#include "dns/dns_options.h"

namespace sb::dns {

// --dns-corefile at start: parses and maps the Corefile and sets `options`
// from the server block that has the kubernetes plugin (docs/corefile.md):
// cluster_domain, ttl, pods, the kubernetes plugin's reverse zones,
// fallthrough, endpoint_pod_names and noendpoints, hosts, shuffle
// (loadbalance), autopath (`autopath @kubernetes`), upstreams and forward (its `forward .` and that
// forward's options), caches, stubs (every other block on its port, one StubZone per zone, and the
// block's own `forward FROM`s), query_log (the `log` and `errors` of every block on its port), and
// listen (the block's port on its `bind` addresses, else on the addresses already in
// options.listen; with neither, listen stays empty: DNS off, said in a
// warning unless `local_addresses_serve`: --dns-local-address's addresses,
// which the daemon serves on port 53 besides `listen`). Returns the
// warnings to log. `typed`, when given, receives the whole typed
// configuration (for what is served beside DnsOptions: the CoreDNS HTTP
// endpoints); its warnings are moved into the returned list.
Result<std::vector<std::string>> apply_corefile(std::string_view text, std::string_view path,
                                                const EnvironmentLookup& lookup,
                                                DnsOptions& options,
                                                bool local_addresses_serve = false,
                                                CorefileConfig* typed = nullptr);

}  // namespace sb::dns
