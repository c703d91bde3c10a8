// The syntax rules of field values that the decoders check: Kubernetes' name
// rules and IP addresses as the API server accepts them. The lowest module of
// watch/decode/: it includes none of the others. is_dns_label and
// is_dns_subdomain are public (the DNS layer checks names with them); the
// rest, in sb::watch::decoding, is private to watch/decode/. Pure and
// thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/ip.h"

namespace sb::watch {

// RFC 1123 label (<= 63, [a-z0-9-], alphanumeric at both ends) and subdomain
// (<= 253, dot-separated labels). Exposed for the DNS layer and the sources.
bool is_dns_label(std::string_view text);
bool is_dns_subdomain(std::string_view text);

}  // namespace sb::watch

namespace sb::watch::decoding {

// RFC 1035 label as Kubernetes checks Service names: an RFC 1123 label that
// starts with a letter.
bool is_dns1035_label(std::string_view text);
// Kubernetes label value (topology zones): <= 63, [A-Za-z0-9._-],
// alphanumeric at both ends; empty is allowed by the caller.
bool is_label_value(std::string_view text);
// Kubernetes qualified name (label and taint keys): an optional prefix that
// is an RFC 1123 subdomain and a '/', then a name of at most 63
// alphanumerics, '-', '_' or '.', alphanumeric at both ends.
bool is_qualified_name(std::string_view text);
// IANA service name (RFC 6335) as Kubernetes checks named ports: 1-15
// characters, [a-z0-9-], at least one letter, no leading, trailing or
// doubled '-'.
bool is_iana_svc_name(std::string_view text);

// An IP address in strict form; nullopt when `text` is not one.
std::optional<IpAddress> parse_ip(std::string_view text);

// Why the API server refuses `address` as an endpoint (ValidateEndpointIP:
// these ranges serve node-local purposes; the link-local range holds the
// cloud metadata address, CVE-2021-25737); empty when it is allowed. An
// IPv4-mapped IPv6 address is judged as its IPv4 address, as Go's net.IP.
std::string special_endpoint_range(const IpAddress& address);

}  // namespace sb::watch::decoding
