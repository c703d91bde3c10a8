// Kubelet's bounds on the search list it writes into a Pod's resolv.conf
// (formDNSSearchFitsLimits), shared by `switchboard pod-dns` (text names)
// and the server-side search path (wire names). Pure.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace sb::dns {

// pkg/apis/core/validation: MaxDNSSearchPaths, MaxDNSSearchListChars; and
// DNS1123SubdomainMaxLength for one domain (glibc 2.28 aborts on longer).
inline constexpr size_t kMaxSearchPaths = 32;
inline constexpr size_t kMaxSearchListChars = 2048;
inline constexpr size_t kMaxSearchDomainChars = 253;

// The text length kubelet counts for one entry of `list`.
using SearchLength = size_t (*)(const std::string& entry);

// Trims `list` as kubelet does, in its order: to kMaxSearchPaths entries,
// then without the entries over kMaxSearchDomainChars, then cut from the end
// until the space-joined line is at most kMaxSearchListChars. True when any
// entry was dropped (kubelet's "Search Line limits were exceeded" warning).
bool fit_search_limits(std::vector<std::string>& list, SearchLength length);

}  // namespace sb::dns
