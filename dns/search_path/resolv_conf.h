// The node's resolv.conf: its nameservers are the forwarder's upstreams
// (`forward . /etc/resolv.conf` in a Corefile and --dns-upstreams' default),
// its search domains the end of a Pod's search path as kubelet writes it,
// which the server-side search path walks (dns/search_path/autopath.h). `options` lines
// apply to neither. Pure and thread-safe, except that the functions taking
// a path read the file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"

namespace sb::dns {

// The nameservers of resolv.conf text, in file order: a line whose first word
// is `nameserver` and whose second an address. Other lines, comments, and
// addresses IpAddress cannot hold (a zone index, fe80::1%eth0) are skipped,
// as CoreDNS's reading of the file skips them.
std::vector<HostPort> parse_resolv_conf_nameservers(std::string_view text);

// The same for a file; empty when unreadable.
std::vector<HostPort> resolv_conf_nameservers(const std::string& path);

// The node's resolv.conf as kubelet reads it (parseResolvConf), the base of
// a Pod's resolv.conf under dnsPolicy Default and of its search list under
// ClusterFirst: every `nameserver` line's address as written; the last
// `search` line's domains, each without its trailing dot, "." dropped; the
// `options` of every line, a later value of an option replacing an earlier
// one in its place. A line is cut at its first comment character.
struct KubeletResolvConf {
    std::vector<std::string> nameservers;
    std::vector<std::string> searches;
    std::vector<std::string> options;  // "ndots:5", "rotate"
};
KubeletResolvConf parse_resolv_conf_as_kubelet(std::string_view text);

// A resolver option's name: its text before the first colon ("ndots" of
// "ndots:5"), by which kubelet merges options.
std::string_view resolv_conf_option_name(std::string_view option);

// Most search domains kept from one file; kubelet's limit for a whole Pod
// search list (MaxDNSSearchPaths), which these are only the end of.
inline constexpr size_t kMaxResolvConfSearches = 32;

// The search domains of resolv.conf text as kubelet reads them
// (parse_resolv_conf_as_kubelet); `domain` lines are ignored. Domains that are
// not DNS names (an empty label, a label over 63 bytes, a name over 253
// characters) are dropped, since no resolver can ask them, and at most
// kMaxResolvConfSearches are kept.
std::vector<std::string> parse_resolv_conf_searches(std::string_view text);

// The same for a file; empty when unreadable.
std::vector<std::string> resolv_conf_searches(const std::string& path);

}  // namespace sb::dns
