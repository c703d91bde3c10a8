// The server-side search path ("autopath", CoreDNS's plugin of that name
// with `autopath @kubernetes`): which names a Pod's resolver would ask
// after the one it asked, so that the server can ask them itself and
// answer in one round trip (docs/dns.md, "Search path on the server").
// The walk itself is the query dispatcher's (dns/serve/query_dispatcher.cpp).
//
// Thread safety: pure functions and plain values.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dns/search_path/search_limits.h"

namespace sb::dns {

// The engine's part of the search path (QueryEngine::autopath).
struct AutopathPolicy {
    bool enabled = false;  // `autopath @kubernetes`, --dns-autopath
    // The node resolv.conf's search domains (parse_resolv_conf_searches),
    // in wire form: what kubelet appends to a ClusterFirst Pod's list.
    std::vector<std::string> node_searches;
};

// One name the server asks in the client's stead.
struct SearchStep {
    std::string name;  // wire form: the base name as asked (its case) + a search domain
    // Its position in the Pod's search list, the bare base name's being the
    // list's length: the queries the client does not send when this name
    // answers.
    size_t index = 0;
};

// The rest of the search walk for `name` (wire form, as asked) from a Pod
// of namespace `ns` whose search list is the default one, `zone` the
// cluster domain in lower-cased wire form: nullopt when `name` is not a
// first expansion (strictly under `<ns>.svc.<zone>`, case-insensitively).
// Otherwise the names after the first, in the client's order:
// `<base>.svc.<zone>`, `<base>.<zone>`, `<base>` + each of
// `node_searches`, then `<base>` itself, over the list kubelet writes for
// that Pod (duplicates dropped, then trimmed to kMaxSearchPaths domains,
// each at most kMaxSearchDomainChars, kMaxSearchListChars in all). A name
// over 255 bytes is left out (no resolver can ask it).
std::optional<std::vector<SearchStep>> search_steps(std::string_view name, std::string_view ns,
                                                    std::string_view zone,
                                                    const std::vector<std::string>& node_searches);

// Whether `lower_name` (lower-cased wire form) is strictly under
// `<ns>.svc.<zone>`: the cheap test the serving path makes before its
// rendered-reply cache, whose replies are the same for every client.
bool is_first_expansion(std::string_view lower_name, std::string_view ns, std::string_view zone);

}  // namespace sb::dns
