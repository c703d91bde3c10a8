// The node's resolv.conf, as the forwarder's upstreams: `forward . /etc/resolv.conf`
// in a Corefile and --dns-upstreams' default. Only `nameserver` lines are
// read (port 53); what else the file says (search, options) does not apply to
// a forwarder. Pure and thread-safe, except that resolv_conf_nameservers
// reads the file.
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

}  // namespace sb::dns
