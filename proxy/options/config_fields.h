// The fields of each KubeProxyConfiguration version switchboard reads, and
// the option row (proxy/options/option_table.h) each one feeds: v1alpha1's
// are the rows' own ConfigFields; v1alpha2 (kube-proxy's KEP-784 layout:
// linux.*, top-level sync periods, bind address lists) is a table of its
// own over the same rows, so a value still means the same and is refused
// with the same words whichever version gives it. Pure data, built once.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/ip.h"
#include "base/result.h"
#include "proxy/options/option_table.h"

namespace sb::proxy {

enum class ConfigVersion { kV1alpha1, kV1alpha2 };

struct VersionField {
    const OptionSpec* spec = nullptr;
    ConfigField field;
    // Among the row's fields of this version: a lower one wins.
    size_t order = 0;
    // The file's kind where it is not the row's: v1alpha2's
    // detectLocal.clusterCIDRs is a list, --cluster-cidr comma-separated.
    std::optional<ValueKind> kind = std::nullopt;
};

// Every field of `version`, by row (table order), then by order.
const std::vector<VersionField>& config_fields(ConfigVersion version);

// v1alpha2's fields that several make one row's value: nodeIPOverride
// (--bind-address), healthzBindAddresses and healthzBindPort
// (--healthz-bind-address), metricsBindAddresses and metricsBindPort
// (--metrics-bind-address).
bool is_v1alpha2_bind_field(std::string_view path);

// The ADDRESS of a v1alpha2 bind address list of CIDRs, as the row of a
// v1alpha1 bind address takes it: switchboard's HTTP servers listen on one
// address, so the list must name one: a /32 or /128 (that address), the
// /0 of IPv4 (0.0.0.0; with ::/0 too, IPv4's: [::] is IPv6 only here) or
// 127.0.0.0/8 (127.0.0.1; with ::1/128 too). Anything else is refused.
// A list of both families gives the address of `primary` (the node IP's
// family: nodeIPOverride). `addresses` empty: kube-proxy's default list,
// `any` (healthz: 0.0.0.0/0 and ::/0) or loopback (metrics).
Result<std::string> v1alpha2_bind_address(const std::vector<std::string>& addresses, bool any,
                                          IpFamily primary);

// The path of the row's first field in `version` (for messages about a
// default); empty when the version has none.
std::string_view first_field_path(const OptionSpec& spec, ConfigVersion version);

}  // namespace sb::proxy
