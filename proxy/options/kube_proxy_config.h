// kube-proxy's configuration file (--config): a KubeProxyConfiguration,
// apiVersion kubeproxy.config.k8s.io/v1alpha1 (exactly as kubeadm writes it
// into the kube-proxy ConfigMap) or v1alpha2 (proxy/options/config_fields.h),
// in YAML or JSON.
//
// Pure: the file's text in, the option values out. Each field is mapped to
// its row of the option table (proxy/options/option_table.h) and handed over as
// text, so proxy/options/flags.cpp validates file values and flag values with the
// same code. kube-proxy's defaulting of the version is applied on the way: null
// and, where kube-proxy defaults them, zero values ("", 0s) count as absent,
// and the mode's section (iptables.*, nftables.*, ipvs.*) is the one read.
// See docs/kube-proxy-config.md for every field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "proxy/options/config_fields.h"
#include "proxy/options/option_table.h"

namespace sb::proxy {

struct KubeProxyConfig {
    ConfigVersion version = ConfigVersion::kV1alpha1;
    // One value per option row the file sets (the row's first matching field
    // wins), plus kube-proxy's file defaults that differ from the flags'.
    // Origins are "PATH:LINE: field" (no line for defaults).
    std::vector<OptionValue> values;
    // At most one line each: fields without meaning here, fields of another
    // mode's section, unknown fields of v1alpha1 (kube-proxy's lenient
    // v1alpha1 decoding accepts those too, with a log line; v1alpha2's are
    // errors, as its strict decoding has them).
    std::vector<std::string> warnings;
};

// `path` only names the file in messages. Errors are kInvalidArgument, one
// line `PATH:LINE: why` (malformed YAML, wrong apiVersion or kind, a value
// of the wrong type); values are validated later, by their rows.
Result<KubeProxyConfig> parse_kube_proxy_config(std::string_view text, std::string_view path);

}  // namespace sb::proxy
